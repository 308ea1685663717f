//! Progress bars for long work: the interpreter's long statements
//! (`run --interp`, a compiled run's fallback, `verify`'s floating-point
//! comparison) and `verify`'s trials; and the spinner of the optimizer's
//! search (`optimize`, `run --optimize`, `bench --optimize`), which tells
//! the search's events as they come.
//!
//! `interp::Progress` is how the libraries report; this crate alone draws,
//! with indicatif, on stderr. A bar appears only once its work has lasted
//! a second (short work would flicker), and indicatif hides it when stderr
//! is not a terminal, so captured and piped output never contains one.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use opt::optimize::Event;

/// Work that lasts less than this shows no bar.
const QUIET: Duration = Duration::from_secs(1);

/// The work under way, and its bar once shown.
#[derive(Debug)]
struct Work {
    what: String,
    total: u64,
    done: u64,
    started: Instant,
    bar: Option<ProgressBar>,
}

/// Bars on stderr, one piece of work at a time.
#[derive(Debug, Default)]
pub struct Bars {
    work: Mutex<Option<Work>>,
}

impl Bars {
    /// A reporter drawing bars on stderr.
    pub fn reporter() -> interp::Reporter {
        interp::Reporter::new(Arc::new(Bars::default()))
    }

    fn with(&self, f: impl FnOnce(&mut Option<Work>)) {
        // A panic elsewhere cannot leave the state inconsistent: use it.
        f(&mut self.work.lock().unwrap_or_else(PoisonError::into_inner));
    }
}

impl interp::Progress for Bars {
    fn start(&self, what: &str, total: u64) {
        self.with(|w| {
            *w = Some(Work {
                what: what.to_string(),
                total,
                done: 0,
                started: Instant::now(),
                bar: None,
            })
        });
    }

    fn advance(&self, done: u64) {
        self.with(|w| {
            let Some(w) = w else { return };
            w.done = w.done.saturating_add(done).min(w.total);
            if w.bar.is_none() && w.started.elapsed() >= QUIET {
                let bar =
                    ProgressBar::with_draw_target(Some(w.total), ProgressDrawTarget::stderr());
                if let Ok(style) =
                    ProgressStyle::with_template("{msg} [{bar:30}] {percent}% ({eta} left)")
                {
                    bar.set_style(style.progress_chars("=> "));
                }
                bar.set_message(w.what.clone());
                w.bar = Some(bar);
            }
            if let Some(bar) = &w.bar {
                bar.set_position(w.done);
            }
        });
    }

    fn finish(&self) {
        self.with(|w| {
            if let Some(bar) = w.take().and_then(|w| w.bar) {
                bar.finish_and_clear();
            }
        });
    }
}

/// The spinner shown while the optimizer searches.
#[derive(Debug)]
pub struct Searching {
    bar: ProgressBar,
}

impl Searching {
    /// A spinner on stderr, ticking until [`Searching::finish`].
    pub fn start() -> Searching {
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
        if let Ok(style) = ProgressStyle::with_template("{spinner} optimizing: {msg} ({elapsed})") {
            bar.set_style(style);
        }
        bar.enable_steady_tick(Duration::from_millis(200));
        Searching { bar }
    }

    /// Tells the search's event `e`.
    pub fn report(&self, e: Event) {
        let ms = |d: Duration| format!("{:.3} ms", d.as_secs_f64() * 1e3);
        match e {
            Event::Saturated { classes, nodes, .. } => self
                .bar
                .set_message(format!("e-graph of {classes} classes, {nodes} nodes")),
            Event::Measured {
                index, count, best, ..
            } => self.bar.set_message(format!(
                "measured {} of {count} candidates, best {}",
                index + 1,
                ms(best)
            )),
            Event::Verifying => self
                .bar
                .set_message("proving the result equal to the original"),
        }
    }

    /// Removes the spinner.
    pub fn finish(self) {
        self.bar.finish_and_clear();
    }
}
