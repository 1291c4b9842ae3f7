/// The checker's event properties (language 1.2): their declarations, and the filters that
/// read them (`count(purchase where amount >= 10)`).
extension Checker {
    /// Reports a property declared twice in one event's list.
    mutating func checkProperties(_ properties: [PropertyDecl], of event: Name, _ file: SourceFile) {
        var seen = Set<String>()
        for property in properties where !seen.insert(property.name.text).inserted {
            error(Message.duplicateProperty(property.name.text, of: event.text), file, property.name.range)
        }
    }

    /// True when two declarations give one event the same properties, in any order.
    func same(_ a: [PropertyDecl], _ b: [PropertyDecl]) -> Bool {
        Dictionary(a.map { ($0.name.text, $0.type) }, uniquingKeysWith: { x, _ in x })
            == Dictionary(b.map { ($0.name.text, $0.type) }, uniquingKeysWith: { x, _ in x })
    }

    /// Checks `filter`, read over the properties of `event`: every name a property of it,
    /// every comparison between a property and a value of its type, the whole true or false.
    mutating func checkFilter(_ filter: Expr, of event: Name, _ file: SourceFile) -> Bool {
        guard let properties = program.properties[event.text] else {
            error(Message.noProperties(event.text), file, event.range)
            return false
        }
        filterEvent = event.text
        filterProperties = [:]
        for property in properties { if let type = property.type { filterProperties[property.name.text] = type } }
        defer {
            filterEvent = nil
            filterProperties = [:]
        }
        guard let type = typeOf(filter, file) else { return false }
        guard type == .bool else {
            error(Message.filterNotBool(type), file, filter.range)
            return false
        }
        return true
    }
}
