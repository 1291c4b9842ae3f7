/// The streams the engine knows, by slot: those the rules name first, then any the app
/// triggers. A slot never changes, so compiled rules and handles can hold it.
struct StreamTable: Sendable {
    /// Name to slot; slot `n` is the `n`th name stored, so the names are kept there only.
    var index = NameTable()

    var count: Int { index.count }

    /// The name of the stream in `slot`.
    func name(_ slot: Int) -> String { index.name(at: slot) }

    /// Calls `body` with the UTF-8 of the name of the stream in `slot`, in place.
    @inline(__always)
    func withName<R>(_ slot: Int, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try index.withName(at: slot, body)
    }

    /// Every stream's name, by slot.
    var names: [String] { index.names }

    /// The slot of stream `name`, made if new.
    mutating func slot(_ name: String) -> Int { index.insert(name) }

    /// The slot of the stream named by the UTF-8 `bytes`, made if new.
    mutating func slot(bytes: UnsafeRawBufferPointer) -> Int {
        index.position(of: bytes) ?? index.insert(String(decoding: bytes, as: UTF8.self))
    }
}
