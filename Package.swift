// swift-tools-version:6.0
import PackageDescription

// SwiftFM has no package dependencies by design: Foundation (FoundationNetworking on Linux) and Dispatch only.
let package = Package(
    name: "SwiftFM",
    platforms: [.macOS(.v12), .iOS(.v15), .tvOS(.v15), .watchOS(.v8)],
    products: [
        .library(name: "SwiftFM", targets: ["SwiftFM"]),
        .library(name: "SwiftFMEmulator", targets: ["SwiftFMEmulator"]),
        .executable(name: "fm-emulator", targets: ["fm-emulator"]),
        .executable(name: "fm-examples", targets: ["FMExamples"]),
        .executable(name: "fm-bench", targets: ["fm-bench"]),
        .executable(name: "fm-codegen", targets: ["fm-codegen"]),
        .plugin(name: "GenerateModels", targets: ["GenerateModels"]),
    ],
    targets: [
        // SHA-256, HMAC, HKDF and big-integer arithmetic for Claris ID (Cognito SRP) sign-in; internal.
        // No unsafe flags: SwiftPM refuses a version-pinned dependency whose targets carry them.
        .target(name: "FMCrypto"),
        // The client library.
        // libcurl on Linux, loaded at run time (dlopen): fixed-argument wrappers of curl's variadic calls; no headers.
        .target(name: "CFMCurl", linkerSettings: [.linkedLibrary("dl", .when(platforms: [.linux]))]),
        .target(name: "SwiftFM", dependencies: ["FMCrypto", "CFMCurl"]),
        // OpenSSL 3 on Linux, loaded at run time (dlopen), for the emulator's HTTPS; no headers.
        .target(name: "CFMTLS", linkerSettings: [.linkedLibrary("dl", .when(platforms: [.linux]))]),
        // The FileMaker Data API emulator (never imported by SwiftFM itself).
        .target(
            name: "SwiftFMEmulator",
            dependencies: ["FMCrypto", "CFMTLS"],
            resources: [.copy("Resources/demo-schema.json")]
        ),
        // `fm-emulator capture`: copies a live solution into a schema file with the SwiftFM client.
        .target(name: "FMCapture", dependencies: ["SwiftFM"]),
        .executableTarget(name: "fm-emulator", dependencies: ["SwiftFMEmulator", "FMCapture"]),
        .executableTarget(name: "fm-bench", dependencies: ["SwiftFM", "SwiftFMEmulator"]),
        // `fm-codegen`: Swift types from layout metadata (a server, or a schema file through the emulator).
        .target(name: "FMCodegen", dependencies: ["SwiftFM", "SwiftFMEmulator"]),
        .executableTarget(name: "fm-codegen", dependencies: ["FMCodegen", "SwiftFM"]),
        // `swift package --allow-writing-to-package-directory generate-models --schema FILE --output DIR`: runs fm-codegen.
        .plugin(
            name: "GenerateModels",
            capability: .command(
                intent: .custom(verb: "generate-models", description: "Writes a Swift type per FileMaker layout with fm-codegen"),
                permissions: [.writeToPackageDirectory(reason: "fm-codegen writes the generated Swift files into the package")]
            ),
            dependencies: ["fm-codegen"]
        ),
        .executableTarget(
            name: "FMExamples",
            dependencies: ["SwiftFM", "SwiftFMEmulator"],
            path: "Examples/FMExamples"
        ),

        // What several test targets share (a seeded random generator, pipe reading that survives EINTR); not a product.
        .target(name: "TestSupport", path: "Tests/TestSupport"),
        // Known-answer tests of the crypto (FIPS 180-4, RFC 4231, RFC 5869, RFC 5054, pycognito).
        .testTarget(name: "FMCryptoTests", dependencies: ["FMCrypto", "TestSupport"]),
        // Unit tests of the client (no network).
        .testTarget(name: "SwiftFMTests", dependencies: ["SwiftFM", "TestSupport"]),
        // Raw-HTTP conformance tests of the emulator (URLSession, not the SwiftFM client).
        .testTarget(name: "SwiftFMEmulatorTests", dependencies: ["SwiftFMEmulator", "FMCrypto", "TestSupport"]),
        // The client against the emulator on loopback, through the callback and async surfaces.
        .testTarget(name: "IntegrationTests", dependencies: ["SwiftFM", "SwiftFMEmulator", "FMCapture", "TestSupport"]),
        // fm-codegen: its output for the demo, League and odd-names solutions, compiled here and read against the emulator.
        .testTarget(name: "CodegenTests", dependencies: ["FMCodegen", "SwiftFM", "SwiftFMEmulator", "TestSupport"]),
        // Legacy call-site corpus, compiled in both language modes.
        .testTarget(name: "LegacySwift6Tests", dependencies: ["SwiftFM", "SwiftFMEmulator"]),
        .testTarget(
            name: "LegacySwift5Tests",
            dependencies: ["SwiftFM", "SwiftFMEmulator"],
            swiftSettings: [.swiftLanguageMode(.v5)]
        ),
    ]
)
