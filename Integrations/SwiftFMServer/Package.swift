// swift-tools-version:6.0
import PackageDescription

// SwiftFMServer: SwiftFM in a server-side Swift daemon (swift-log, swift-metrics, swift-distributed-tracing,
// swift-service-lifecycle). A package of its own, so the SwiftFM package itself keeps no dependency.
let package = Package(
    name: "SwiftFMServer",
    platforms: [.macOS(.v13), .iOS(.v16), .tvOS(.v16), .watchOS(.v9)],
    products: [
        .library(name: "SwiftFMServer", targets: ["SwiftFMServer"]),
        .executable(name: "fm-daemon", targets: ["fm-daemon"]),
    ],
    dependencies: [
        // Named, so the product reference does not depend on the folder a clone is checked out in.
        .package(name: "SwiftFM", path: "../.."),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-distributed-tracing.git", from: "1.7.3"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
    ],
    targets: [
        .target(
            name: "SwiftFMServer",
            dependencies: [
                .product(name: "SwiftFM", package: "SwiftFM"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // An example daemon: the four wired with a ServiceGroup, against the in-process emulator by default.
        .executableTarget(
            name: "fm-daemon",
            dependencies: [
                "SwiftFMServer",
                .product(name: "SwiftFMEmulator", package: "SwiftFM"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .testTarget(
            name: "SwiftFMServerTests",
            dependencies: [
                "SwiftFMServer",
                .product(name: "SwiftFMEmulator", package: "SwiftFM"),
                .product(name: "InMemoryLogging", package: "swift-log"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
                .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "ServiceLifecycleTestKit", package: "swift-service-lifecycle"),
            ]
        ),
    ]
)
