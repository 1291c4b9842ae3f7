import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A one-connection-at-a-time HTTP server on 127.0.0.1 for the delivery tests: each request is
/// answered by `respond` with a status, headers and a body of `bodyLength` bytes (sent in chunks
/// of `byte`, stopping when the client closes). Counts the body bytes it managed to send.
final class LoopbackServer: @unchecked Sendable {
    struct Response {
        var status: Int
        var headers: [String: String] = [:]
        var body: [UInt8] = []
        /// When set, the body is this many bytes of `fill` instead of `body`.
        var streamed: Int?
        var fill: UInt8 = UInt8(ascii: "#")
        /// False: no `Content-Length` (the body ends when the connection closes).
        var sayLength = true
    }

    let port: UInt16
    private let listener: Int32
    private let respond: @Sendable (String) -> Response
    private let lock = NSLock()
    private var sent = 0
    private var requests: [String] = []

    init(_ respond: @escaping @Sendable (String) -> Response) throws {
        self.respond = respond
        #if canImport(Glibc)
            let listening = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
            let listening = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listening, $0, length) }
        }
        guard bound == 0, listen(listening, 8) == 0 else {
            close(listening)
            throw POSIXError(.EADDRINUSE)
        }
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listening, $0, &length) }
        }
        listener = listening
        port = UInt16(bigEndian: address.sin_port)
        Thread.detachNewThread { [self] in serve() }
    }

    deinit { close(listener) }

    var url: URL { URL(string: "http://127.0.0.1:\(port)/rules")! }

    /// Body bytes sent so far, over every request.
    var bodyBytesSent: Int { lock.withLock { sent } }

    /// The requests' header blocks, in order.
    var requestHeaders: [String] { lock.withLock { requests } }

    func stop() {
        shutdown(listener, Int32(SHUT_RDWR))
    }

    private func serve() {
        signal(SIGPIPE, SIG_IGN)
        while true {
            let connection = accept(listener, nil, nil)
            if connection < 0 { return }
            var request = [UInt8]()
            var buffer = [UInt8](repeating: 0, count: 4096)
            while !request.suffix(4).elementsEqual(Array("\r\n\r\n".utf8)) {
                let n = read(connection, &buffer, buffer.count)
                if n <= 0 { break }
                request += buffer[0..<n]
            }
            let text = String(decoding: request, as: UTF8.self)
            lock.withLock { requests.append(text) }
            let response = respond(text)
            let length = response.streamed ?? response.body.count
            var head = "HTTP/1.1 \(response.status) X\r\nConnection: close\r\n"
            // A 304 has no body.
            if response.sayLength && response.status != 304 { head += "Content-Length: \(length)\r\n" }
            for (name, value) in response.headers { head += "\(name): \(value)\r\n" }
            head += "\r\n"
            _ = Array(head.utf8).withUnsafeBytes { write(connection, $0.baseAddress, $0.count) }
            if let streamed = response.streamed {
                let chunk = [UInt8](repeating: response.fill, count: 64 * 1024)
                var left = streamed
                while left > 0 {
                    let n = chunk.withUnsafeBytes { write(connection, $0.baseAddress, min(left, $0.count)) }
                    if n <= 0 { break }
                    left -= n
                    lock.withLock { sent += n }
                }
            } else {
                let n = response.body.withUnsafeBytes { write(connection, $0.baseAddress, $0.count) }
                lock.withLock { sent += max(0, n) }
            }
            close(connection)
        }
    }
}
