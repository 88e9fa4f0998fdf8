// swift-tools-version:6.1
import PackageDescription

// Swift 6 language mode everywhere.
let package = Package(
    name: "Sightline",
    platforms: [.macOS(.v14)],
    products: [
        .library(name: "IndexModel", targets: ["IndexModel"]),
        .library(name: "Workloads", targets: ["Workloads"]),
        .library(name: "Threads", targets: ["Threads"]),
        .library(name: "ByteCoding", targets: ["ByteCoding"]),
        .library(name: "IndexQuery", targets: ["IndexQuery"]),
        .library(name: "SyncWire", targets: ["SyncWire"]),
        .library(name: "Snapshot", targets: ["Snapshot"]),
        .library(name: "SQLiteSupport", targets: ["SQLiteSupport"]),
        .library(name: "DeviceStore", targets: ["DeviceStore"]),
        .library(name: "CloudCore", targets: ["CloudCore"]),
        .library(name: "CloudSQLite", targets: ["CloudSQLite"]),
        .library(name: "CloudPostgres", targets: ["CloudPostgres"]),
        .library(name: "CloudServer", targets: ["CloudServer"]),
        .library(name: "SyncHTTP", targets: ["SyncHTTP"]),
        .library(name: "Simulation", targets: ["Simulation"]),
        .library(name: "WebMarkup", targets: ["WebMarkup"]),
        .library(name: "LocalPrivacy", targets: ["LocalPrivacy"]),
        .executable(name: "sightline", targets: ["sightline"]),
    ],
    dependencies: [
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/apple/swift-crypto", from: "3.12.3"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/x-sheep/swift-property-based", from: "2.0.1"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-certificates", from: "1.21.1"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        .package(url: "https://github.com/apple/swift-distributed-tracing", from: "1.7.3"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        // Optional tracing export (`cloud serve --otlp-traces`): OTLP over HTTP only, without gRPC.
        .package(url: "https://github.com/swift-otel/swift-otel", from: "1.6.0", traits: ["OTLPHTTP"]),
        // `swift package generate-documentation`, which tools/check runs over each library's DocC catalog.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
    ],
    targets: [
        .target(name: "IndexModel"),
        // libxml2's HTML parser, for the web markup a crawl reads (Debian libxml2-dev).
        .systemLibrary(name: "CLibXML2", pkgConfig: "libxml-2.0", providers: [.apt(["libxml2-dev"])]),
        // What a web page's markup says of it: title, description, image, rating, price, deep link.
        .target(name: "WebMarkup", dependencies: ["CLibXML2", "IndexModel", "SyncWire"]),
        .target(name: "IndexQuery", dependencies: ["IndexModel"]),
        // Seeded synthetic workloads for benchmarks, tests and the simulator.
        .target(name: "Workloads", dependencies: ["IndexModel"]),
        // Local differential privacy: Apple's count-mean sketch, device and server halves.
        .target(name: "LocalPrivacy", dependencies: ["IndexModel", .product(name: "Crypto", package: "swift-crypto")]),
        // The system zlib, for deflate in sync frames (tools/install-deps installs zlib1g-dev).
        .systemLibrary(name: "CZlib", path: "Sources/CZlib"),
        // LZ4's block format (tools/install-deps installs liblz4-dev), for the images of sleeping stores.
        .systemLibrary(name: "CLZ4", path: "Sources/CLZ4"),
        // Process-wide SQLite settings that need sqlite3_config (variadic, so not callable from Swift).
        .systemLibrary(name: "CSQLiteTuning", path: "Sources/CSQLiteTuning"),
        // jemalloc as the sightline binary's allocator, with huge pages (tools/install-deps
        // installs libjemalloc-dev); Sources/CAllocator/allocator.c says why.
        .target(name: "CAllocator", linkerSettings: [.linkedLibrary("jemalloc")]),
        // A SQLite VFS whose database files are buffers in memory (SQLiteSupport's PageBuffers).
        .target(name: "CPageBuffers", linkerSettings: [.linkedLibrary("sqlite3")]),
        // Threading tools: a bounded hand-off queue, work on both cores, a row stream between threads.
        .target(name: "Threads"),
        // Raw deflate through the system zlib and hexadecimal, for sync frames and snapshots alike;
        // LZ4 blocks for the images of sleeping stores.
        .target(name: "ByteCoding", dependencies: ["CZlib", "CLZ4"]),
        .target(
            name: "SyncWire",
            dependencies: [
                "ByteCoding",
                "IndexModel",
                "LocalPrivacy",
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        // The backup snapshot container: chunked deflate, optional AES-GCM, a manifest.
        .target(
            name: "Snapshot",
            dependencies: [
                "Threads",
                "IndexModel",
                "ByteCoding",
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        // Shared by the device and cloud stores: projection digests over GRDB.
        .target(
            name: "SQLiteSupport",
            dependencies: [
                "IndexModel",
                "CPageBuffers",
                .product(name: "GRDB", package: "GRDB.swift"),
                // The C API, for statements bound and stepped directly.
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        // The cloud without a backend: the rules, the ingest and fold every
        // backend runs, the log's chain, and the CloudStore protocol.
        .target(
            name: "CloudCore",
            dependencies: [
                "ByteCoding",
                "IndexModel",
                "IndexQuery",
                "LocalPrivacy",
                "SyncWire",
                "Snapshot",
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        // The cloud's SQLite backend, and the cloud store file every
        // backend's backups are written in.
        .target(
            name: "CloudSQLite",
            dependencies: [
                "CloudCore",
                "Threads",
                "ByteCoding",
                "IndexModel",
                "IndexQuery",
                "LocalPrivacy",
                "SyncWire",
                "SQLiteSupport",
                "Snapshot",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        // Blocking PostgreSQL connections over postgres-nio, for the cloud's PostgreSQL backend.
        .target(
            name: "CloudPostgres",
            dependencies: [
                "CloudCore",
                "CloudSQLite",
                "IndexModel",
                "SyncWire",
                "Snapshot",
                "ByteCoding",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ]
        ),
        // The HTTP API over a CloudStore (Hummingbird, swift-log, metrics in a swift-prometheus registry).
        .target(
            name: "CloudServer",
            dependencies: [
                "CloudCore",
                "IndexModel",
                "IndexQuery",
                "SyncWire",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HummingbirdTLS", package: "hummingbird"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        // Sync over HTTP (AsyncHTTPClient): the device's transport and enrolment.
        .target(
            name: "SyncHTTP",
            dependencies: [
                "SyncWire",
                "IndexModel",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ]
        ),
        .target(
            name: "DeviceStore",
            dependencies: [
                "ByteCoding",
                "Threads",
                "IndexModel",
                "IndexQuery",
                "LocalPrivacy",
                "SyncWire",
                "SQLiteSupport",
                "Snapshot",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        // The deterministic multi-device simulator: workload, faults, oracle, invariants, reports.
        .target(
            name: "Inspect",
            dependencies: ["IndexModel", "SyncWire", "DeviceStore", "CloudCore"]
        ),
        .target(
            name: "Simulation",
            dependencies: [
                "ByteCoding",
                "Workloads",
                "Threads",
                "IndexModel",
                "IndexQuery",
                "SyncWire",
                "Snapshot",
                "DeviceStore",
                "CloudCore",
                "CloudSQLite",
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        .executableTarget(
            name: "sightline",
            dependencies: [
                "Workloads",
                "LocalPrivacy",
                "ByteCoding",
                "IndexModel",
                "IndexQuery",
                "DeviceStore",
                "SyncWire",
                "SyncHTTP",
                "CloudCore", "CloudSQLite",
                "CloudPostgres",
                "CloudServer",
                "SQLiteSupport",
                "Snapshot",
                "Simulation",
                "Inspect",
                "WebMarkup",
                "CSQLiteTuning",
                "CAllocator",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "GRDB", package: "GRDB.swift"),
                // The raw C API, for the benchmarks' baselines.
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "OTel", package: "swift-otel"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                // `sync` makes its own client for the transport's timeouts.
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
            ]
        ),
        .testTarget(
            name: "IndexModelTests",
            dependencies: [
                "IndexModel",
                "ScratchDirectory",
                "TextTestSupport",
                .product(name: "PropertyBased", package: "swift-property-based"),
            ]
        ),
        // Random queries and items, shared by the query and store tests.
        .target(
            name: "QueryTestSupport",
            dependencies: [
                "IndexQuery",
                "IndexModel",
                .product(name: "PropertyBased", package: "swift-property-based"),
            ],
            path: "Tests/QueryTestSupport"
        ),
        // Temporary directories that the test process removes when it exits.
        .target(name: "ScratchDirectory", path: "Tests/ScratchDirectory"),
        // Strings a hostile peer sends, for the tests of every boundary that takes text.
        .target(
            name: "TextTestSupport",
            dependencies: [
                "IndexModel",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "PropertyBased", package: "swift-property-based"),
            ],
            path: "Tests/TextTestSupport"
        ),
        .testTarget(name: "ByteCodingTests", dependencies: [
            "ByteCoding", .product(name: "PropertyBased", package: "swift-property-based"),
        ]),
        .testTarget(name: "LocalPrivacyTests", dependencies: ["LocalPrivacy", "IndexModel"]),
        .testTarget(name: "ThreadsTests", dependencies: ["Threads"]),
        .testTarget(
            name: "SyncWireTests",
            dependencies: ["SyncWire", "ByteCoding", "IndexModel", "ScratchDirectory", "TextTestSupport",
                           .product(name: "PropertyBased", package: "swift-property-based")]
        ),
        // A served cloud on a loopback port, for the server's tests and the HTTP client's.
        .target(
            name: "ServerTestSupport",
            dependencies: [
                "CloudServer", "CloudCore", "CloudSQLite", "SyncHTTP", "DeviceStore", "SyncWire", "IndexModel",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
            ],
            path: "Tests/ServerTestSupport"
        ),
        .testTarget(
            name: "WebMarkupTests",
            dependencies: ["WebMarkup", "IndexModel", "SyncWire"],
            exclude: ["Pages"]
        ),
        .testTarget(
            name: "CloudServerTests",
            dependencies: [
                "CloudServer", "CloudCore", "CloudSQLite", "CloudPostgres", "SyncHTTP", "DeviceStore", "SyncWire", "IndexModel", "IndexQuery",
                "ScratchDirectory", "ServerTestSupport", "TextTestSupport", "PostgresTestSupport",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "SyncHTTPTests",
            dependencies: [
                "SyncHTTP", "SyncWire", "IndexModel", "DeviceStore", "CloudCore", "CloudSQLite", "CloudServer", "ScratchDirectory",
                "ServerTestSupport",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        // A PostgreSQL database per test: the cluster tools/test started, or one
        // that tools/postgres starts for this test process.
        .target(name: "PostgresTestSupport", dependencies: ["CloudPostgres"], path: "Tests/PostgresTestSupport"),
        .testTarget(
            name: "CloudPostgresTests",
            dependencies: ["CloudPostgres", "PostgresTestSupport", .product(name: "PostgresNIO", package: "postgres-nio")]),
        .testTarget(
            name: "CloudTests",
            dependencies: [
                "CloudCore", "CloudSQLite", "CloudPostgres", "PostgresTestSupport", "DeviceStore", "SyncWire", "IndexModel", "IndexQuery", "Snapshot", "ScratchDirectory",
                "TextTestSupport",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "PropertyBased", package: "swift-property-based"),
            ]
        ),
        .testTarget(
            name: "IndexQueryTests",
            dependencies: [
                "IndexQuery",
                "IndexModel",
                "QueryTestSupport",
                .product(name: "PropertyBased", package: "swift-property-based"),
            ]
        ),
        .testTarget(
            name: "DeviceStoreTests",
            dependencies: [
                "Workloads",
                "DeviceStore",
                "SQLiteSupport",
                "SyncWire",
                "IndexModel",
                "IndexQuery",
                "QueryTestSupport",
                "ScratchDirectory",
                "TextTestSupport",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
                .product(name: "PropertyBased", package: "swift-property-based"),
            ]
        ),
        .testTarget(
            name: "SnapshotTests",
            dependencies: [
                "Snapshot", "ByteCoding", "SyncWire", "IndexModel", "ScratchDirectory",
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        .testTarget(
            name: "SQLiteSupportTests",
            dependencies: [
                "SQLiteSupport",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
            ]
        ),
        .testTarget(
            name: "SimulationTests",
            dependencies: [
                "CloudCore", "CloudSQLite", "CloudPostgres",
                "PostgresTestSupport",
                "IndexModel",
                "Simulation",
                "SyncWire",
                "ScratchDirectory",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "PropertyBased", package: "swift-property-based"),
            ]
        ),
        .testTarget(
            name: "SightlineCLITests",
            dependencies: ["sightline", "CAllocator", "DeviceStore", "IndexModel", "Workloads", "ScratchDirectory", "CloudCore", "CloudSQLite", "CloudPostgres", "Snapshot", "SyncWire",
                           "PostgresTestSupport"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
