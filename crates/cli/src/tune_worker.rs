//! `tessera tune-worker`: measures one autotuning job in this process and
//! exits (`engine::tune::worker` starts one per job, so that a candidate
//! that crashes or hangs takes only this process with it). The job is
//! JSON on standard input; the reply is JSON on standard output.

use std::io::Read;

#[derive(clap::Args, Debug)]
pub struct TuneWorkerArgs {}

pub fn run(_a: &TuneWorkerArgs) -> Result<String, String> {
    let mut input = String::new();
    std::io::stdin()
        .read_to_string(&mut input)
        .map_err(|e| format!("error: cannot read the job: {e}"))?;
    engine::tune::job::run_json(&input)
        .map(|s| format!("{s}\n"))
        .map_err(|e| format!("error: {e}"))
}
