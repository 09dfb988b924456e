// Placeholder until the client API lands (the examples are being written against it).
import SwiftFM
