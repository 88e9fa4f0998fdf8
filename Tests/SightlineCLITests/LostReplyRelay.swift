import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A TCP relay on the loopback in front of two servers, for a reply lost
/// after the cloud committed: the first connection goes to `first`, and
/// once `first` starts to answer (it answers after its commit) both ends are
/// cut and the answer is dropped; every later connection goes to `second`.
/// A device syncing through it sends a frame to one server and, having heard
/// nothing, sends it again to the other.
final class LostReplyRelay: Sendable {
    let port: Int
    private let listener: Int32
    private let connections = Atomic<Int>(0)
    private let dropped = Atomic<Bool>(false)

    /// Whether a reply of `first` was dropped.
    var droppedAReply: Bool { dropped.load(ordering: .sequentiallyConsistent) }

    init(first: Int, second: Int) throws {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard listener >= 0 else { throw POSIXError(.EIO) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let listening = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                bind(listener, socketAddress, length) == 0 && getsockname(listener, socketAddress, &length) == 0
                    && listen(listener, 16) == 0
            }
        }
        guard listening else {
            Glibc.close(listener)
            throw POSIXError(.EADDRINUSE)
        }
        port = Int(UInt16(bigEndian: address.sin_port))
        self.listener = listener
        Thread { [self] in
            while true {
                let client = accept(listener, nil, nil)
                guard client >= 0 else { return }
                let isFirst = connections.add(1, ordering: .sequentiallyConsistent).oldValue == 0
                relay(client, to: isFirst ? first : second, dropReply: isFirst)
            }
        }.start()
    }

    /// Stops accepting connections; those relayed end with their ends.
    func close() {
        shutdown(listener, Int32(SHUT_RDWR))
        Glibc.close(listener)
    }

    /// Relays `client` to the server on `port`, one thread each way.
    private func relay(_ client: Int32, to port: Int, dropReply: Bool) {
        let server = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        let connected = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(server, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
        guard server >= 0, connected else {
            Glibc.close(client)
            if server >= 0 { Glibc.close(server) }
            return
        }
        let ends = Ends()
        let finish: @Sendable () -> Void = {
            if ends.count.subtract(1, ordering: .sequentiallyConsistent).newValue == 0 {
                Glibc.close(client)
                Glibc.close(server)
            }
        }
        Thread {
            LostReplyRelay.pump(from: client, to: server)
            finish()
        }.start()
        Thread { [self] in
            if dropReply {
                var byte: UInt8 = 0
                _ = read(server, &byte, 1)
                dropped.store(true, ordering: .sequentiallyConsistent)
                shutdown(client, Int32(SHUT_RDWR))
                shutdown(server, Int32(SHUT_RDWR))
            } else {
                LostReplyRelay.pump(from: server, to: client)
            }
            finish()
        }.start()
    }

    /// The two directions of one relayed connection still running.
    private final class Ends: Sendable {
        let count = Atomic<Int>(2)
    }

    /// Copies bytes from one socket to the other until either end closes.
    private static func pump(from source: Int32, to destination: Int32) {
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(source, $0.baseAddress, $0.count) }
            guard count > 0 else { break }
            var written = 0
            while written < count {
                let wrote = buffer.withUnsafeBytes { send(destination, $0.baseAddress! + written, count - written, Int32(MSG_NOSIGNAL)) }
                guard wrote > 0 else {
                    shutdown(source, Int32(SHUT_RDWR))
                    return
                }
                written += wrote
            }
        }
        shutdown(destination, Int32(SHUT_WR))
    }
}
