import SwiftFM
