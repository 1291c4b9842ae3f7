import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension RuleDelivery {
    /// What a fetch did.
    public enum FetchResult: Sendable, Equatable {
        /// The server said the staged rules are current (HTTP 304): nothing changed.
        case notModified
        /// New rules were checked and staged, with the server's `ETag` as their version.
        case staged(version: String?)
    }

    /// The `ETag` of the staged rules, when the staged file is the one it was given with.
    public var stagedVersion: String? {
        guard case .success(let bytes?) = readStaged() else { return nil }
        return stagedVersion(of: bytes)
    }

    /// Fetches `url` with a conditional GET (`If-None-Match` with the staged rules' `ETag`):
    /// a 304 changes nothing; a 200's body is checked and staged as ``stage(_:version:activatingIn:)``
    /// does, with the response's `ETag` as its version. Fetching and activating are separate
    /// steps: without `engine`, the rules become active at the next launch. Throws ``Refusal``.
    ///
    /// The response is read only up to ``maximumSize``: a longer body (or a `Content-Length`
    /// over it) is refused as soon as it is seen, so memory stays within about the limit.
    /// A redirect to another host is refused unless `redirectsToOtherHosts` allows it: the
    /// rules would then come from wherever that host points, and only the app's integrity
    /// check (``integrityCheck``), not the seal, tells who wrote them. A 304 when no rules are
    /// staged (the request named no `ETag`) is an error, not ``FetchResult/notModified``.
    /// `session`'s configuration is used for the request.
    public func fetch(
        from url: URL, session: URLSession = .shared, redirectsToOtherHosts: Bool = false,
        activatingIn engine: RuleEngine? = nil
    ) async throws -> FetchResult {
        var request = URLRequest(url: url)
        request.cachePolicy = .reloadIgnoringLocalCacheData
        let staged = stagedVersion
        if let staged { request.setValue(staged, forHTTPHeaderField: "If-None-Match") }
        let receiver = BoundedReceiver(limit: maximumSize, host: url.host, redirectsToOtherHosts: redirectsToOtherHosts)
        let bounded = URLSession(configuration: session.configuration, delegate: receiver, delegateQueue: nil)
        defer { bounded.finishTasksAndInvalidate() }
        let (data, http) = try await receiver.run(request, in: bounded)
        switch http.statusCode {
        case 304:
            guard staged != nil else {
                throw Refusal.fetchFailed(
                    "HTTP status 304 (not modified), but no rules are staged and the request named no 'ETag'")
            }
            return .notModified
        case 200:
            let etag = http.value(forHTTPHeaderField: "ETag")
            try stage(data, version: etag, activatingIn: engine)
            return .staged(version: etag)
        default:
            if let refused = receiver.refusedRedirect {
                throw Refusal.fetchFailed(
                    "a redirect to another host ('\(refused)') was refused; pass redirectsToOtherHosts: true to follow it"
                )
            }
            throw Refusal.fetchFailed("HTTP status \(http.statusCode)")
        }
    }
}

/// The delegate of one fetch: keeps the body up to the limit and cancels past it, and follows
/// redirects to the same host only (unless allowed).
final class BoundedReceiver: NSObject, URLSessionDataDelegate, Sendable {
    private let limit: Int
    private let host: String?
    private let redirectsToOtherHosts: Bool
    /// What the fetch has received so far, changed by the session's delegate calls.
    private struct Received: Sendable {
        var body = Data()
        var tooLarge: Int?
        var redirect: String?
        var continuation: CheckedContinuation<(Data, HTTPURLResponse), Error>?
    }
    private let received = Protected(Received())

    init(limit: Int, host: String?, redirectsToOtherHosts: Bool) {
        self.limit = limit
        self.host = host
        self.redirectsToOtherHosts = redirectsToOtherHosts
    }

    /// The host of a redirect that was not followed.
    var refusedRedirect: String? { received.withLock { $0.redirect } }

    func run(_ request: URLRequest, in session: URLSession) async throws -> (Data, HTTPURLResponse) {
        try await withCheckedThrowingContinuation { continuation in
            received.withLock { $0.continuation = continuation }
            session.dataTask(with: request).resume()
        }
    }

    func urlSession(
        _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
        completionHandler: @escaping (URLSession.ResponseDisposition) -> Void
    ) {
        let expected = response.expectedContentLength
        if expected > Int64(limit) {
            refuse(size: Int(clamping: expected))
            completionHandler(.cancel)
            return
        }
        completionHandler(.allow)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        let limit = self.limit
        let (over, size): (Bool, Int) = received.withLock {
            if let tooLarge = $0.tooLarge { return (true, tooLarge) }
            if $0.body.count + data.count > limit { return (true, $0.body.count + data.count) }
            $0.body.append(data)
            return (false, 0)
        }
        if over {
            refuse(size: size)
            dataTask.cancel()
        }
    }

    /// Refuses the body as too large: the fetch returns now, not when the transfer has stopped.
    /// (On Linux a cancelled transfer was once read to its end, a minute for 16 GiB over
    /// loopback, before the task completed.) Later data is dropped.
    private func refuse(size: Int) {
        let continuation: CheckedContinuation<(Data, HTTPURLResponse), Error>? = received.withLock {
            if $0.tooLarge == nil { $0.tooLarge = size }
            $0.body = Data()
            let taken = $0.continuation
            $0.continuation = nil
            return taken
        }
        continuation?.resume(throwing: RuleDelivery.Refusal.tooLarge(size: size, limit: limit))
    }

    func urlSession(
        _ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest, completionHandler: @escaping (URLRequest?) -> Void
    ) {
        let target = request.url?.host
        if redirectsToOtherHosts || target?.lowercased() == host?.lowercased() {
            completionHandler(request)
        } else {
            received.withLock { $0.redirect = target ?? request.url?.absoluteString ?? "?" }
            completionHandler(nil)
        }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: Error?) {
        let (continuation, body, tooLarge) = received.withLock {
            let taken = $0.continuation
            $0.continuation = nil
            return (taken, $0.body, $0.tooLarge)
        }
        guard let continuation else { return }
        if let tooLarge {
            continuation.resume(throwing: RuleDelivery.Refusal.tooLarge(size: tooLarge, limit: limit))
        } else if let error {
            continuation.resume(throwing: RuleDelivery.Refusal.fetchFailed(error.localizedDescription))
        } else if let http = task.response as? HTTPURLResponse {
            continuation.resume(returning: (body, http))
        } else {
            continuation.resume(throwing: RuleDelivery.Refusal.fetchFailed("not an HTTP response"))
        }
    }
}
