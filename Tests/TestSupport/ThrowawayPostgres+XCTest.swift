import Foundation
@_exported import ScratchPostgres
import XCTest

extension XCTestCase {
    /// A throwaway PostgreSQL for this test (stop it in a `defer`). Skips the test where
    /// PostgreSQL is not installed, unless `RULES_POSTGRES=required` (CI sets it).
    public func throwawayPostgres() throws -> ThrowawayPostgres {
        do {
            return try ThrowawayPostgres()
        } catch let missing as ThrowawayPostgres.Unavailable
            where ProcessInfo.processInfo.environment["RULES_POSTGRES"] != "required"
        {
            throw XCTSkip("PostgreSQL is not installed here: \(missing)")
        }
    }
}
