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
        FileManager.default.contents(atPath: stagedURL.path).flatMap { stagedVersion(of: [UInt8]($0)) }
    }

    /// Fetches `url` with a conditional GET (`If-None-Match` with the staged rules' `ETag`):
    /// a 304 changes nothing; a 200's body is checked and staged as ``stage(_:version:activatingIn:)``
    /// does, with the response's `ETag` as its version. Fetching and activating are separate
    /// steps: without `engine`, the rules become active at the next launch. Throws ``Refusal``.
    public func fetch(from url: URL, session: URLSession = .shared, activatingIn engine: RuleEngine? = nil)
        async throws -> FetchResult
    {
        var request = URLRequest(url: url)
        request.cachePolicy = .reloadIgnoringLocalCacheData
        if let etag = stagedVersion { request.setValue(etag, forHTTPHeaderField: "If-None-Match") }
        let (data, response): (Data, URLResponse) = try await withCheckedThrowingContinuation { continuation in
            session.dataTask(with: request) { data, response, error in
                if let error {
                    continuation.resume(throwing: Refusal.fetchFailed(error.localizedDescription))
                } else if let response {
                    continuation.resume(returning: (data ?? Data(), response))
                } else {
                    continuation.resume(throwing: Refusal.fetchFailed("no response"))
                }
            }.resume()
        }
        guard let http = response as? HTTPURLResponse else { throw Refusal.fetchFailed("not an HTTP response") }
        switch http.statusCode {
        case 304:
            return .notModified
        case 200:
            let etag = http.value(forHTTPHeaderField: "ETag")
            try stage(data, version: etag, activatingIn: engine)
            return .staged(version: etag)
        default:
            throw Refusal.fetchFailed("HTTP status \(http.statusCode)")
        }
    }
}
