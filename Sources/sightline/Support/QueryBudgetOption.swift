import ArgumentParser
import IndexQuery

/// `--budget UNITS` and `--timeout SECONDS`: how much work one query may do
/// (`QueryBudget`). Past either, the command says the query is too expensive
/// and exits 2.
struct QueryBudgetOption: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("""
        The most work the query may do, in units (a string predicate looking at a value costs the value's \
        length in bytes times the pattern's; default \(QueryBudget.defaultUnits)).
        """, valueName: "units"))
    var budget: Int = QueryBudget.defaultUnits

    @Option(name: .long, help: ArgumentHelp("The longest the query may run, in seconds (default 60).", valueName: "seconds"))
    var timeout: Double = 60

    func validate() throws {
        guard budget >= 1 else { throw ValidationError("--budget must be at least 1") }
        guard timeout > 0, timeout <= 86_400 else { throw ValidationError("--timeout must be more than 0 and at most 86400 seconds") }
    }

    /// A budget for one run that starts now.
    func make() -> QueryBudget {
        QueryBudget(units: budget, deadline: .now + .milliseconds(Int64(timeout * 1000)))
    }
}

extension QueryTooExpensive {
    /// Prints the stop and turns it into the CLI's exit status.
    func exit() -> ExitCode {
        Output.error("error: \(description)")
        return ExitStatus.invalidInput
    }
}
