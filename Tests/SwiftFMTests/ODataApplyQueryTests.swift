import Foundation
import Testing
@testable import SwiftFM

/// `FMODataApply`: what the builder writes, how it is escaped and encoded, and what it refuses.
@Suite struct ODataApplyQueryTests {
    @Test("Claris's example, written by the builder")
    func clarisExample() throws {
        let apply = FMODataApply.groupBy(["Category"], [.sum("Unit Price", as: "Sum of Unit Price")])
        #expect(try apply.expression().get() == #"groupby((Category),aggregate("Unit Price" with sum as "Sum of Unit Price"))"#)
    }

    @Test("every method, aggregate alone, filter then groupby, raw steps")
    func shapes() throws {
        let methods: [FMODataAggregate] = [.sum("a", as: "s"), .min("a", as: "lo"), .max("a", as: "hi"), .average("a", as: "avg"),
                                           .countDistinct("b", as: "n")]
        #expect(try FMODataApply.aggregate(methods).expression().get()
                == "aggregate(a with sum as s,a with min as lo,a with max as hi,a with average as avg,b with countdistinct as n)")
        #expect(FMODataAggregate.Method.allCases.map(\.rawValue) == ["sum", "min", "max", "average", "countdistinct"])
        let chained = FMODataApply.filter(.gt("year", 1990) && .ne("city", "Oslo"))
            .then(.groupBy(["city", "year"], [.sum("sales", as: "total")]))
            .then(.raw("filter(total gt 10)"))
        #expect(chained.description == "filter(year gt 1990 and city ne 'Oslo')/groupby((city,year),aggregate(sales with sum as total))/filter(total gt 10)")
        #expect(FMODataApply.groupBy(["city"]).description == "groupby((city))")
        #expect(FMODataApply.aggregate(.max("joined", as: "latest")).description == "aggregate(joined with max as latest)")
    }

    @Test("literals stay literals and names stay names, whatever they hold")
    func escaping() throws {
        let hostile = "x') or (1 eq 1) or contains(name,'"
        let text = try FMODataApply.filter(.eq("name", FMODataValue.string(hostile))).then(.aggregate(.sum("score", as: "id")))
            .expression().get()
        #expect(text == "filter(name eq 'x'') or (1 eq 1) or contains(name,''')/aggregate(score with sum as \"id\")")
        // The filter part tokenizes to exactly three tokens: name, eq, one string literal holding the value.
        let inner = String(text.dropFirst("filter(".count).prefix { $0 != "/" }.dropLast())
        #expect(try FilterToken.tokenize(inner) == [.name("name"), .name("eq"), .string(hostile)])
        // Names that need quotes get them; names that cannot be written are refused, never sent.
        #expect(try FMODataApply.groupBy(["Zip Code", "Straße"]).expression().get() == #"groupby(("Zip Code","Straße"))"#)
        #expect(FMODataApply.groupBy(["a\"b"]).expression().code == FMError.ClientCode.invalidArgument)
        #expect(FMODataApply.aggregate(.sum("a", as: "b\"c")).expression().code == FMError.ClientCode.invalidArgument)
        #expect(FMODataApply.aggregate(.sum("a\u{1}", as: "b")).expression().code == FMError.ClientCode.invalidArgument)
    }

    @Test("empty groups, empty aggregate lists and empty raw steps are refused")
    func refusals() {
        #expect(FMODataApply.groupBy([]).expression().code == FMError.ClientCode.invalidArgument)
        #expect(FMODataApply.aggregate([]).expression().code == FMError.ClientCode.invalidArgument)
        #expect(FMODataApply.raw("").expression().code == FMError.ClientCode.invalidArgument)
        #expect(FMODataQuery(apply: .aggregate([])).queryString().code == FMError.ClientCode.invalidArgument)
        #expect(FMODataApply.aggregate([]).description.hasPrefix("<invalid: "))
    }

    @Test("$apply comes first in the query string, encoded like $filter; not inside $expand")
    func queryString() throws {
        let query = FMODataQuery(apply: .filter(.eq("city", "a b&c")).then(.groupBy(["Unit Price"], [.sum("qty", as: "n")])),
                                 orderBy: [.descending("n")], top: 5, count: true)
        #expect(try query.queryString().get()
                == "$apply=filter(city%20eq%20'a%20b%26c')/groupby((%22Unit%20Price%22),aggregate(qty%20with%20sum%20as%20n))"
                + "&$orderby=n%20desc&$top=5&$count=true")
        var nested = FMODataQuery(expand: [FMODataExpand("Orders", query: FMODataQuery(apply: .aggregate(.sum("t", as: "s")), top: 2))])
        #expect(try nested.queryString().get() == "$expand=Orders($top=2)")
        nested.apply = .groupBy(["x"])
        #expect(try nested.queryString().get() == "$apply=groupby((x))&$expand=Orders($top=2)")
        #expect(FMODataQuery().apply == nil)
    }
}
