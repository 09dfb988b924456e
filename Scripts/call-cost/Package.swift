// swift-tools-version:6.0
// Instructions per call of SwiftFM's client, by configuration, counted by callgrind: run ../call-cost.sh.
import PackageDescription

let package = Package(
    name: "call-cost",
    dependencies: [.package(name: "SwiftFM", path: "../..")],
    targets: [
        .executableTarget(name: "call-cost", dependencies: [.product(name: "SwiftFM", package: "SwiftFM")]),
    ]
)
