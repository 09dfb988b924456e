// swift-tools-version:6.0
// The getRecord walk of Sources/SwiftFM/SwiftFM.docc/Architecture.md, measured: run ../getrecord-walk.sh.
import PackageDescription

let package = Package(
    name: "getrecord-walk",
    dependencies: [.package(name: "SwiftFM", path: "../..")],
    targets: [
        .executableTarget(name: "getrecord-walk", dependencies: [
            .product(name: "SwiftFM", package: "SwiftFM"),
            .product(name: "SwiftFMEmulator", package: "SwiftFM"),
        ]),
    ]
)
