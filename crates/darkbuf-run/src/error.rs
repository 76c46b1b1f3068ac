//! What can go wrong between a scenario and its results, kept apart by who is to blame
//! (the CLI maps them to its exit codes, Python to exception classes).

use darkbuf_scenario::Diagnostic;

#[derive(Debug)]
pub enum Error {
    /// Bad scenario input, with its file, line, column and what would be valid.
    Scenario(Diagnostic),
    /// The scenario's machine profile cannot be loaded, without a position. [`profile_of`]
    /// reports a profile that does not load as [`Error::Scenario`] at the scenario's
    /// `machine.profile` (see `Machine::profile_error`); this stays for other callers.
    ///
    /// [`profile_of`]: crate::profile_of
    Profile(String),
    /// The simulator could not set the scenario up.
    Sim(String),
    /// The run reached one of the simulator's bounds on what it holds while it ran
    /// (`darkbuf_scenario::limits`: a web entry whose arrivals outpace the path): the
    /// scenario's inputs, not the simulator, are to change.
    Limit(String),
    /// A job or a job's output that does not decode: a bug, or a worker running
    /// another version of darkbuf.
    Internal(String),
}

impl From<Diagnostic> for Error {
    fn from(d: Diagnostic) -> Self {
        Error::Scenario(d)
    }
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Scenario(d) => write!(f, "{d}"),
            Error::Profile(m) | Error::Sim(m) | Error::Limit(m) | Error::Internal(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for Error {}
