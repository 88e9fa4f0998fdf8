import CloudCore
import Foundation
import Hummingbird
import IndexModel
import Logging

extension CloudServer {
    /// `POST /v1/enrol`.
    func enrol(_ request: Request, context: CloudRequestContext) async -> Response {
        let body: [UInt8]
        do {
            body = try await collect(request, upTo: 16 * 1024)
        } catch let error as BodyTimeout {
            metrics.enrolmentRefused("timeout")
            return error.response
        } catch {
            metrics.enrolmentRefused("tooLarge")
            return CloudServer.error(.contentTooLarge, "tooLarge", "an enrolment request is at most 16 KiB")
        }
        guard case .object(let object)? = try? JSONReader.parse(body),
              case .string(let appName)? = object["app"], case .string(let deviceName)? = object["device"],
              case .string(let secret)? = object["secret"] else {
            metrics.enrolmentRefused("malformed")
            return CloudServer.error(.badRequest, "malformed", "expected a JSON object with string members app, device and secret")
        }
        let app = AppID(appName)
        let device = DeviceID(deviceName)
        var proof: [UInt8]?
        if let member = object["proof"] {
            guard case .string(let encoded) = member, let decoded = Data(base64Encoded: encoded), (16...64).contains(decoded.count) else {
                metrics.enrolmentRefused("malformed")
                return CloudServer.error(.badRequest, "malformed", "proof must be 16 to 64 bytes in base64")
            }
            proof = [UInt8](decoded)
        }
        let enrolled = try? await blocking { [proof] in
            Result { () throws(CloudError) in try cloud.enrol(app: app, device: device, enrolmentSecret: secret, proof: proof) }
        }
        switch enrolled {
        case nil:
            metrics.enrolmentRefused("unavailable")
            return CloudServer.error(.serviceUnavailable, "unavailable", "the server is shutting down")
        case .success(let key)?:
            metrics.enrolled()
            context.logger.info("enrolled", metadata: ["device": "\(device)", "app": "\(app)"])
            return CloudServer.json(.ok, ["device": .string(device.rawValue), "key": .string(Data(key).base64EncodedString())])
        case .failure(let error)?:
            metrics.enrolmentRefused(error.code.rawValue)
            // A name refused as invalid (a line break, too long) is not logged: in text logs it could forge a line.
            let named: Logger.Metadata = error.code == .invalidOption ? [:] : ["device": "\(device)"]
            context.logger.notice("enrolment refused", metadata: named.merging(["reason": "\(error.code.rawValue)"]) { $1 })
            switch error.code {
            case .alreadyEnrolled: return CloudServer.error(.conflict, error.code.rawValue, error.message)
            case .enrolmentRefused: return CloudServer.error(.forbidden, error.code.rawValue, error.message)
            case .invalidOption: return CloudServer.error(.badRequest, error.code.rawValue, error.message)
            default: return CloudServer.error(.serviceUnavailable, "unavailable", error.message)
            }
        }
    }
}
