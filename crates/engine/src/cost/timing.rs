//! Timing a compiled program: warm-up runs, then timed runs, reported by
//! their median and minimum.
//!
//! The warm-up lasts for the runs asked and at least a quarter of a
//! second, so that page faults, thread wake-ups and frequency ramps are
//! over before the first timed run.

use std::time::Instant;

use runtime::{State, StepProfile};

use crate::{Compiled, Error};

/// The shortest warm-up, in seconds.
const MIN_WARMUP_SECONDS: f64 = 0.25;

/// The times of the timed runs.
#[derive(Clone, Debug)]
pub struct Timing {
    /// The warm-up runs made.
    pub warmups: u32,
    /// Each timed run's time in seconds, ascending.
    pub seconds: Vec<f64>,
    /// With profiling, each timed run's steps, in run order.
    pub profiles: Vec<Vec<StepProfile>>,
}

impl Timing {
    /// The median time in seconds (the mean of the middle two of an even
    /// count).
    pub fn median(&self) -> f64 {
        median(&self.seconds)
    }

    /// The shortest time in seconds.
    pub fn min(&self) -> f64 {
        self.seconds[0]
    }
}

/// The median of ascending times `t` (the mean of the middle two of an
/// even count); `t` must not be empty.
pub fn median(t: &[f64]) -> f64 {
    if t.len() % 2 == 1 {
        t[t.len() / 2]
    } else {
        (t[t.len() / 2 - 1] + t[t.len() / 2]) / 2.0
    }
}

/// Runs `compiled` on `state` `warmup` times (and for at least a quarter
/// of a second), then `runs` times, timing each; with `profile`, records
/// each timed run's steps. `runs` must be at least 1.
pub fn time_runs(
    compiled: &Compiled,
    state: &mut State,
    runs: u32,
    warmup: u32,
    profile: bool,
) -> Result<Timing, Error> {
    if runs == 0 {
        return Err(Error::Usage("at least one timed run is needed".to_string()));
    }
    let warm = Instant::now();
    let mut warmups = 0;
    while warmups < warmup || warm.elapsed().as_secs_f64() < MIN_WARMUP_SECONDS {
        compiled.run_state(state, None).map_err(Error::Compiled)?;
        warmups += 1;
    }
    let mut seconds = Vec::with_capacity(runs as usize);
    let mut profiles = Vec::new();
    for _ in 0..runs {
        let mut steps = Vec::new();
        let t = Instant::now();
        compiled
            .run_state(state, profile.then_some(&mut steps))
            .map_err(Error::Compiled)?;
        seconds.push(t.elapsed().as_secs_f64());
        if profile {
            profiles.push(steps);
        }
    }
    seconds.sort_by(f64::total_cmp);
    Ok(Timing {
        warmups,
        seconds,
        profiles,
    })
}

/// Times `runs` runs of `compiled` on `state` with no warm-up (the caller
/// warmed it): each run's time in seconds, in run order.
pub fn time_batch(compiled: &Compiled, state: &mut State, runs: u32) -> Result<Vec<f64>, Error> {
    let mut seconds = Vec::with_capacity(runs as usize);
    for _ in 0..runs {
        let t = Instant::now();
        compiled.run_state(state, None).map_err(Error::Compiled)?;
        seconds.push(t.elapsed().as_secs_f64());
    }
    Ok(seconds)
}
