//! [`Builder`]: how an extension sets pylogsink up when its module loads.
//!
//! The author picks the environment variable that the extension's users
//! set (`MYRUNTIME_LOG`) and what is logged when they set nothing; the
//! users decide the rest, at start-up through that variable and at run
//! time from Python.

use crate::call::logging;
use crate::control::{self, destination, filter, Destination, FilterError, DEFAULT_FILTER};
use crate::core::emit::emit_record;
use crate::core::{crash, fork};
use crate::dest::budget::{self, Budget};
use crate::dest::fd;
use crate::record::color::{self, ColorChoice};
use crate::record::{Level, Record};
use std::fmt;
use std::time::Duration;

/// The environment variable read when the builder names none.
///
/// ```
/// assert_eq!(pylogsink::DEFAULT_ENV, "PYLOGSINK_LOG");
/// ```
pub const DEFAULT_ENV: &str = "PYLOGSINK_LOG";

/// Sets pylogsink up: the filter's variable and default, and color.
///
/// ```no_run
/// # fn main() -> Result<(), pylogsink::InitError> {
/// pylogsink::Builder::new()
///     .env("MYRUNTIME_LOG") // what the extension's users set
///     .default_filter("warn,myruntime=info") // when they set nothing
///     .color(pylogsink::ColorChoice::Auto) // the default: on a terminal
///     .destination(pylogsink::Destination::Stderr) // the default; or Logging
///     .logger_prefix("myruntime") // with Logging: loggers "myruntime.<target>"
///     .crash_handler(true) // the default
///     .init()?;
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct Builder {
    env: String,
    default_filter: String,
    color: ColorChoice,
    destination: Destination,
    logger_prefix: String,
    crash_handler: bool,
    logging_exit_budget: Duration,
    budget: Budget,
    /// Read only with the `tracing` feature.
    #[cfg_attr(not(feature = "tracing"), allow(dead_code))]
    tracing_subscriber: bool,
}

impl Default for Builder {
    fn default() -> Self {
        Builder::new()
    }
}

impl Builder {
    /// A builder with the defaults: the variable [`DEFAULT_ENV`], the
    /// filter `"warn"`, color where fd 2 is a terminal.
    ///
    /// Shown in the [`Builder`] example, as are the other settings.
    pub fn new() -> Builder {
        Builder {
            env: DEFAULT_ENV.to_owned(),
            default_filter: DEFAULT_FILTER.to_owned(),
            color: ColorChoice::Auto,
            destination: Destination::Stderr,
            logger_prefix: String::new(),
            crash_handler: true,
            logging_exit_budget: Duration::from_secs(1),
            budget: budget::DEFAULT,
            tracing_subscriber: true,
        }
    }

    /// The environment variable that holds the users' directives, in
    /// env_logger's syntax (`warn,myruntime=debug`).
    ///
    /// Shown in the [`Builder`] example.
    pub fn env(mut self, var: &str) -> Builder {
        self.env = var.to_owned();
        self
    }

    /// The directives in force when the variable is unset or empty, or
    /// when nothing valid is left of it.
    ///
    /// Shown in the [`Builder`] example.
    pub fn default_filter(mut self, spec: &str) -> Builder {
        self.default_filter = spec.to_owned();
        self
    }

    /// Whether records on fd 2 color their level name: [`ColorChoice::Auto`]
    /// unless set. The users' `NO_COLOR` and `CLICOLOR_FORCE` override it.
    ///
    /// Shown in the [`Builder`] example.
    pub fn color(mut self, choice: ColorChoice) -> Builder {
        self.color = choice;
        self
    }

    /// Where records go: text on stderr ([`Destination::Stderr`], unless
    /// set) or Python's `logging` ([`Destination::Logging`]).
    ///
    /// With `logging`, the default filter does not apply: Python's logger
    /// levels decide, together with the directives the users set, if any.
    /// Its Python side (a thread that delivers records logged outside any
    /// call) starts in [`python::add_functions`](crate::python::add_functions),
    /// or else at the first call.
    ///
    /// Shown in the [`Builder`] example.
    pub fn destination(mut self, destination: Destination) -> Builder {
        self.destination = destination;
        self
    }

    /// A prefix for the names of the Python loggers that records go to
    /// with the `logging` destination: with `"native"`, a record from
    /// `ureq::stream` goes to the logger `native.ureq.stream`.
    ///
    /// Shown in the [`Builder`] example.
    pub fn logger_prefix(mut self, prefix: &str) -> Builder {
        self.logger_prefix = prefix.to_owned();
        self
    }

    /// How long the exit may spend handing records to Python's `logging`
    /// (1 s unless set): pylogsink's delivery thread stops after the
    /// record in hand and is joined, what still waits is delivered until
    /// the budget is spent, and the rest goes to fd 2 as text.
    ///
    /// ```
    /// let builder = pylogsink::Builder::new().logging_exit_budget(std::time::Duration::from_millis(500));
    /// # let _ = builder;
    /// ```
    pub fn logging_exit_budget(mut self, budget: Duration) -> Builder {
        self.logging_exit_budget = budget;
        self
    }

    /// How many bytes of text lines may wait in one place (a call's lines,
    /// the process's queue of lines logged outside any call, the lines
    /// waiting for a replaced `sys.stderr`) before the oldest are left out:
    /// 4 MiB unless set (1 KiB at the least), some 25,000 lines of 100
    /// bytes. What is left out becomes one note where it was, counted in
    /// [`stats`](crate::stats)'s `left_out`. The users' `PYLOGSINK_BUDGET`
    /// overrides it (`lines=8MiB`), and so does `set_log_budget` from
    /// Python.
    ///
    /// ```
    /// let builder = pylogsink::Builder::new().line_budget(16 << 20);
    /// # let _ = builder;
    /// ```
    pub fn line_budget(mut self, bytes: usize) -> Builder {
        self.budget.lines = bytes;
        self
    }

    /// With the `logging` destination, how many records may wait in one
    /// place (a call's, or the process's queue of records logged outside
    /// any call) before the oldest are left out: the newest `records`
    /// (50,000 unless set; one at the least) within `bytes` (16 MiB unless
    /// set; 1 KiB at the least), a record counting for its message, target,
    /// file and 64 bytes. What is left out becomes one note, a Warning of
    /// the `pylogsink` logger, where it was, counted in
    /// [`stats`](crate::stats)'s `left_out`. The users' `PYLOGSINK_BUDGET`
    /// overrides it (`records=100000,record_bytes=32MiB`), and so does
    /// `set_log_budget` from Python.
    ///
    /// ```
    /// let builder = pylogsink::Builder::new().logging_budget(100_000, 32 << 20);
    /// # let _ = builder;
    /// ```
    pub fn logging_budget(mut self, records: usize, bytes: usize) -> Builder {
        self.budget.records = records;
        self.budget.record_bytes = bytes;
        self
    }

    /// Whether to install the crash handler (yes, unless set): on SIGSEGV,
    /// SIGBUS, SIGILL, SIGFPE and SIGABRT it writes the lines that wait in
    /// memory to fd 2, then lets the previous handler (faulthandler's, say)
    /// and the signal's default take their course.
    ///
    /// Shown in the [`Builder`] example.
    pub fn crash_handler(mut self, install: bool) -> Builder {
        self.crash_handler = install;
        self
    }

    /// With the `tracing` feature: whether [`init`](Builder::init) sets the
    /// global default `tracing` subscriber (yes, unless set). Say no when
    /// the extension composes its own subscriber, with
    /// [`tracing::layer`](crate::tracing::layer) among its layers.
    ///
    /// Shown in the [`Builder`] example.
    #[cfg(feature = "tracing")]
    pub fn tracing_subscriber(mut self, install: bool) -> Builder {
        self.tracing_subscriber = install;
        self
    }

    /// Installs pylogsink as the `log` crate's logger (and, with the
    /// `tracing` feature, sets the global default `tracing` subscriber:
    /// tracing-subscriber's registry with `pylogsink::tracing::layer()`)
    /// and puts the filter in force: the variable's directives, else the
    /// default.
    ///
    /// A bad default filter is an [`InitError`] and changes nothing. A bad
    /// value in the variable never is: the valid directives apply (the
    /// default, if none is valid), and one Warn record, from target
    /// `pylogsink`, says what was ignored.
    ///
    /// Calling it again is harmless: it reads the variable again and puts
    /// the settings in force again. If another logger is installed for
    /// `log`, it returns [`InitError::OtherLogger`] and changes nothing;
    /// if another global subscriber is set for `tracing`,
    /// [`InitError::OtherSubscriber`], and changes nothing. Called from a
    /// subinterpreter (a module imported there), it returns
    /// [`InitError::Subinterpreter`] and changes nothing: pylogsink runs in
    /// the main interpreter only.
    ///
    /// ```
    /// // A bad default is refused before anything is installed.
    /// let err = pylogsink::Builder::new().default_filter("warn,my_runtime=loud").init().unwrap_err();
    /// assert!(matches!(err, pylogsink::InitError::Filter(_)));
    /// ```
    pub fn init(self) -> Result<(), InitError> {
        main_interpreter_only()?;
        let default = filter::parse_strict(&self.default_filter).map_err(InitError::Filter)?;
        #[cfg(feature = "tracing")]
        if self.tracing_subscriber && crate::front::tracing::other_subscriber() {
            return Err(InitError::OtherSubscriber);
        }
        crate::front::log::install().map_err(|()| InitError::OtherLogger)?;
        control::own_log_max_level();
        #[cfg(feature = "tracing")]
        if self.tracing_subscriber {
            crate::front::tracing::install().map_err(|()| InitError::OtherSubscriber)?;
        }
        logging::set_prefix(&self.logger_prefix);
        logging::set_exit_budget(self.logging_exit_budget);
        // The users' budget, where they set one, over the extension's.
        let (users_budget, budget_warning) = match std::env::var(budget::ENV) {
            Ok(spec) => match budget::parse(&spec, self.budget) {
                Ok(users) => (users, None),
                Err(why) => (
                    self.budget,
                    Some(format!("{}: ignored: {why}", budget::ENV)),
                ),
            },
            Err(_) => (self.budget, None),
        };
        budget::set(users_budget);
        let value = std::env::var_os(&self.env);
        let (users, warning) = filter::from_env(&self.env, value.as_deref(), default.spec());
        filter::set_default(default);
        filter::set_users(users);
        destination::store(self.destination);
        control::changed();
        let env = |var| std::env::var_os(var);
        color::set(color::resolve(
            self.color,
            env("NO_COLOR").as_deref(),
            env("CLICOLOR_FORCE").as_deref(),
            env("TERM").as_deref(),
        ));
        fd::check_terminal();
        fd::check_stderr();
        fork::install();
        if crate::call::python_runs() {
            pyo3::Python::attach(crate::call::at_init);
        }
        if self.crash_handler {
            crash::install();
        }
        // Said whatever the filter is: they are about the settings.
        for warning in [warning, budget_warning].into_iter().flatten() {
            emit_record(&Record {
                level: Level::Warn,
                target: "pylogsink",
                file: file!(),
                line: line!(),
                message: warning.as_bytes(),
                fields: None,
            });
        }
        Ok(())
    }
}

/// [`InitError::Subinterpreter`] when Python runs and the calling thread is
/// in a subinterpreter: checked before anything is installed.
fn main_interpreter_only() -> Result<(), InitError> {
    if !crate::call::python_runs() || pyo3::Python::attach(crate::call::in_main_interpreter) {
        Ok(())
    } else {
        Err(InitError::Subinterpreter)
    }
}

/// Sets pylogsink up with the defaults: `Builder::new().init()`.
///
/// ```no_run
/// // In the function that `#[pymodule]` marks:
/// pylogsink::init()?;
/// # Ok::<(), pyo3::PyErr>(())
/// ```
pub fn init() -> Result<(), InitError> {
    Builder::new().init()
}

/// Why [`Builder::init`] changed nothing.
///
/// ```
/// let err = pylogsink::Builder::new().default_filter("warn,x=loud").init().unwrap_err();
/// assert!(err.to_string().starts_with("the default filter: "));
/// assert!(err.to_string().contains("x=loud"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum InitError {
    /// Another logger was installed for the `log` crate before.
    OtherLogger,
    /// The builder's default filter is not valid.
    Filter(FilterError),
    /// With the `tracing` feature: another global default subscriber was
    /// set for `tracing` before.
    OtherSubscriber,
    /// Called from a subinterpreter: pylogsink runs in the main interpreter
    /// only, which its Python thread and objects belong to.
    Subinterpreter,
}

impl fmt::Display for InitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InitError::OtherLogger => f.write_str(
                "another logger is already installed for the `log` crate; \
                 pylogsink must be the one that installs it",
            ),
            InitError::Filter(err) => write!(f, "the default filter: {err}"),
            InitError::OtherSubscriber => f.write_str(
                "another global default subscriber is already set for `tracing`; \
                 pylogsink must be the one that sets it (or add pylogsink::tracing::layer() \
                 to that subscriber and build pylogsink without its `tracing` feature)",
            ),
            InitError::Subinterpreter => f.write_str(
                "pylogsink runs in the main interpreter only: a subinterpreter cannot host \
                 its Python thread; import this extension in the main interpreter",
            ),
        }
    }
}

impl std::error::Error for InitError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            InitError::OtherLogger | InitError::OtherSubscriber | InitError::Subinterpreter => None,
            InitError::Filter(err) => Some(err),
        }
    }
}

/// The exception a module's initializer raises, so that `init()?` works in
/// a `#[pymodule]`: ImportError for [`InitError::Subinterpreter`] (the
/// import is what fails), RuntimeError for the others.
///
/// ```no_run
/// use pyo3::prelude::*;
///
/// #[pymodule]
/// fn my_runtime(m: &Bound<'_, PyModule>) -> PyResult<()> {
///     pylogsink::init()?;
///     pylogsink::python::add_functions(m)
/// }
/// ```
impl From<InitError> for pyo3::PyErr {
    fn from(err: InitError) -> pyo3::PyErr {
        match err {
            InitError::Subinterpreter => pyo3::exceptions::PyImportError::new_err(err.to_string()),
            other => pyo3::exceptions::PyRuntimeError::new_err(other.to_string()),
        }
    }
}
