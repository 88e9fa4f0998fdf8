import ArgumentParser
import DeviceStore
import Foundation
import IndexModel
import AsyncHTTPClient
import NIOCore
import Synchronization
import SyncHTTP
import SyncWire

struct SyncCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sync",
        abstract: "Send a device store's outbox to the cloud, enrolling the device first if needed.",
        discussion: """
            Enrols the device with the cloud when it has no device key (the app's enrolment \
            secret comes from --enrolment-secret-file or SIGHTLINE_ENROLMENT_SECRET), then sends \
            every pending outbox message in signed frames, applies the acks, and journals the \
            cloud's content requests so their answers go out in the same run. Lost replies are \
            retried with the same frame after a backoff. Exit status 4 when the cloud refuses \
            for good or cannot be reached; the cursor is kept and the next run resumes.
            """
    )

    @OptionGroup var store: StoreOption
    @OptionGroup var secretOption: EnrolmentSecretOption
    @OptionGroup var output: JSONOption

    @Option(name: .long, help: ArgumentHelp("The cloud's base URL, e.g. http://127.0.0.1:8080.", valueName: "url"))
    var cloud: String

    @Option(name: .long, help: "Attempts of one frame before giving up.")
    var attempts: Int = 6

    @Option(name: .long, help: ArgumentHelp("Seconds to wait for each request (an unreachable cloud fails after this).",
                                            valueName: "seconds"))
    var timeout: Int = 10

    @Option(name: .long, help: ArgumentHelp("For an https:// cloud: trust the certificates in this PEM file (and only them).",
                                            valueName: "pem"))
    var caFile: String?

    func validate() throws {
        guard cloud.hasPrefix("http://") || cloud.hasPrefix("https://") else {
            throw ValidationError("--cloud must be an http:// or https:// URL, not \"\(cloud)\"")
        }
        guard (1...100).contains(attempts) else { throw ValidationError("--attempts must be between 1 and 100") }
        guard (1...3600).contains(timeout) else { throw ValidationError("--timeout must be between 1 and 3600 seconds") }
    }

    func run() async throws {
        guard FileManager.default.fileExists(atPath: store.db) else {
            Output.error("error: no store at \(store.db): check the path (sync never creates a store)")
            throw ExitStatus.storeUnavailable
        }
        let device = try store.openForWriting(clock: SystemClock())
        let client: HTTPClient
        do {
            client = try caFile.map { try CloudClients.trusting(caFile: $0) } ?? .shared
        } catch {
            Output.error("error: cannot read the CA file \(caFile ?? ""): \(error)")
            throw ExitStatus.invalidInput
        }
        do {
            try await run(device: device, client: client)
        } catch {
            if caFile != nil { try? await client.shutdown() }
            throw error
        }
        if caFile != nil { try? await client.shutdown() }
        AutomaticPurge.run(device)
    }

    private func run(device: DeviceStore, client: HTTPClient) async throws {
        var enrolled = false
        do {
            if try device.deviceKey() == nil {
                guard let secret = try secretOption.secret() else {
                    Output.error("error: the device is not enrolled and no enrolment secret was given (--enrolment-secret-file or SIGHTLINE_ENROLMENT_SECRET)")
                    throw ExitStatus.invalidInput
                }
                let key = try await HTTPEnrolment.enrol(baseURL: cloud, app: device.app, device: device.deviceID,
                                                        secret: secret, proof: device.enrolmentProof, timeout: .seconds(Int64(timeout)),
                                                        client: client)
                try device.setDeviceKey(key)
                enrolled = true
            }
        } catch let error as HTTPEnrolment.Failure {
            Output.error("error: \(error.message)")
            throw ExitStatus.syncFailed
        } catch let error as DeviceStoreError {
            Output.error("error: \(error.commandLineMessage)")
            throw ExitStatus.storeUnavailable
        } catch let exit as ExitCode {
            throw exit
        } catch {
            Output.error("error: cannot reach \(cloud) to enrol: \(error)")
            throw ExitStatus.syncFailed
        }
        let report: SyncReport
        let transport = RememberingTransport(HTTPTransport(baseURL: cloud, timeout: .seconds(Int64(timeout)), client: client))
        do {
            report = try await SyncClient(store: device, transport: transport, maximumAttempts: attempts).run()
        } catch {
            Output.error("error: \(error.commandLineMessage)")
            throw ExitStatus.storeUnavailable
        }
        if output.json {
            var object: JSONObject = [
                "device": .string(device.deviceID.rawValue),
                "app": .string(device.app.rawValue),
                "enrolled": .bool(enrolled),
                "frames": .integer(Int64(report.framesSent)),
                "messagesAcknowledged": .integer(Int64(report.messagesAcknowledged)),
                "retries": .integer(Int64(report.retries)),
                "rewinds": .integer(Int64(report.rewinds)),
                "dictionaryResets": .integer(Int64(report.dictionaryResets)),
                "contentRequests": .integer(Int64(report.contentRequests)),
                "votesRestated": .integer(Int64(report.reindexRequests.reduce(0) { $0 + $1.hashes.count })),
                "failure": report.failure.map(JSONValue.string) ?? .null,
            ]
            if report.failure != nil, let last = transport.lastFailure { object["lastExchangeFailure"] = .string(last) }
            if let learned = report.popularityLearned {
                var popularity = JSONObject()
                learned.addJSONFields(to: &popularity)
                object["popularityLearned"] = .object(popularity)
            }
            if let status = report.status {
                object["acknowledged"] = .string(status.acknowledged.description)
                object["droppableThrough"] = .string(status.durable.description)
                object["head"] = .string(status.head.description)
                object["pending"] = .integer(Int64(status.pending))
            }
            Output.json(.object(object))
        } else {
            if enrolled { Output.line("enrolled device \(device.deviceID) for \(device.app)") }
            Output.line("sent \(report.framesSent) frames, \(report.messagesAcknowledged) messages acknowledged, "
                        + "\(report.retries) retries, \(report.contentRequests) content requests answered")
            if let status = report.status {
                Output.line("outbox head \(status.head), acknowledged through \(status.acknowledged), \(status.pending) pending")
            }
            if report.dictionaryResets > 0 {
                Output.line("sent \(report.dictionaryResets) frame(s) again deflated alone: the cloud did not hold the dictionary "
                            + "they were deflated against (it restarted, or another server took them)")
            }
            let restated = report.reindexRequests.reduce(0) { $0 + $1.hashes.count }
            if restated > 0 {
                Output.line("stated its vote again for \(restated) public hash(es) the cloud's reindex requests, "
                            + "or an epoch the cloud ended, named")
            }
            if let learned = report.popularityLearned {
                Output.line("the app now counts popularity " + (learned.privateSettings.map { settings in
                    "privately: a randomised report per engagement, ε \(PrivatePopularity.decimal(settings.epsilonThousandths)) each, "
                        + "at most ε \(PrivatePopularity.decimal(PrivacyBudget.dailyThousandths(settings))) a day"
                } ?? "exactly"))
            }
        }
        if let failure = report.failure {
            // A rejection's message is the cloud's (unsigned, for a frame it
            // could not authenticate), so it is shown, like the rest of what a
            // cloud said, with its control characters escaped.
            Output.error("error: sync stopped: \(TextRule.printable(failure, limit: 1_000))")
            if let last = transport.lastFailure { Output.error("the last exchange that failed: \(TextRule.printable(last, limit: 1_000))") }
            throw ExitStatus.syncFailed
        }
    }
}

/// A transport that remembers why its last exchange failed, so that a sync
/// that gives up can say what the cloud answered (503 `unavailable` while its
/// database is away, say) and not only how often it tried.
final class RememberingTransport: Transport {
    private let transport: any Transport
    private let last = Mutex<String?>(nil)

    init(_ transport: any Transport) {
        self.transport = transport
    }

    /// The message of the newest exchange that ended without a reply, if any did.
    var lastFailure: String? { last.withLock { $0 } }

    func exchange(_ frame: [UInt8]) async throws(TransportError) -> [UInt8] {
        do {
            return try await transport.exchange(frame)
        } catch {
            last.withLock { $0 = error.message }
            throw error
        }
    }
}
