//! `tessera tune` end to end, in a cache directory of its own: a small
//! grouped convolution tuned for two generations measures its candidates
//! in workers, reports the untuned time and the best, and `--show` lists
//! what the cache kept (the winner exactly when the report says it was
//! kept), which a second tune finds there; an ONNX model is tuned with its
//! weights as constants, and `bench` of it finds what was kept; Ctrl-C
//! stops a search, which reports what it found; a def with nothing to tune, one whose kernel cannot run
//! unattended (a scalar parameter) and bad arguments are refused.

use std::io::Read;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn tessera(cache: &PathBuf, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_tessera"))
        .args(args)
        .env("TESSERA_CACHE_DIR", cache)
        .current_dir(testkit::root())
        .output()
        .expect("tessera runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_tuned_kernel_is_reported_and_kept_when_it_wins() {
    let cache =
        PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("tune-cli-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&cache);
    let sizes = [
        "--size", "N=2", "--size", "G=4", "--size", "C=4", "--size", "F=4", "--size", "H=10",
        "--size", "W=10", "--size", "KH=3", "--size", "KW=3",
    ];
    let mut args = vec!["tune", "examples/paper/gconv.tc"];
    args.extend(sizes);
    args.extend(["--generations", "2", "--population", "3", "--budget", "120"]);
    let (code, out, err) = tessera(&cache, &args);
    assert_eq!(code, 0, "{err}");
    let first = out.lines().next().unwrap_or("");
    assert!(
        first.starts_with("gconv: untuned ") && first.ends_with(" failed"),
        "{out}"
    );
    let measured: usize = first
        .split("; ")
        .nth(1)
        .and_then(|s| s.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    assert!(measured >= 2, "{out}");
    let kept = out.contains("kept in the tuning cache");
    let (code, shown, err) = tessera(&cache, &["tune", "--show"]);
    assert_eq!(code, 0, "{err}");
    if kept {
        assert!(
            shown.contains(" gconv [C=4 F=4 G=4 H=10 KH=3 KW=3 N=2 W=10]: "),
            "{shown}"
        );
    } else {
        assert_eq!(shown, "the tuning cache is empty\n");
    }
    // Tuning the same kernel again finds it in the cache, measuring
    // nothing, exactly when it was kept; otherwise it searches again.
    let (code, again, err) = tessera(&cache, &args);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        again.starts_with("gconv: in the tuning cache (found in "),
        kept,
        "{again}"
    );
    let kept = kept || again.contains("kept in the tuning cache");
    // Another process benchmarking the same kernel takes the tuned
    // options from the cache, exactly when they were kept.
    let mut bench = vec!["bench", "examples/paper/gconv.tc"];
    bench.extend(sizes);
    bench.extend(["--runs", "3"]);
    assert_bench_takes_tuned(&cache, &bench, kept);
}

/// `bench` with `args` says it took tuned options exactly when `kept`.
fn assert_bench_takes_tuned(cache: &PathBuf, args: &[&str], kept: bool) {
    let (code, out, err) = tessera(cache, args);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        out.contains("kernel options from the tuning cache"),
        kept,
        "{out}"
    );
}

#[test]
fn an_onnx_model_is_tuned_with_its_weights_as_constants() {
    let cache = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("tune-cli-onnx-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&cache);
    let model = "tests/onnx/fixtures/conv_pad1_bias/model.onnx";
    let (code, out, err) = tessera(
        &cache,
        &["tune", model, "--generations", "2", "--population", "3"],
    );
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("model: untuned "), "{out}");
    let kept = out.contains("kept in the tuning cache");
    // `bench` of the model (its weights constant, as the tuner took them)
    // finds the kernel exactly when it was kept.
    assert_bench_takes_tuned(&cache, &["bench", model, "--runs", "3"], kept);
}

#[test]
fn ctrl_c_stops_the_search_and_keeps_what_it_found() {
    let cache = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("tune-cli-ctrl-c-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&cache);
    // 25 generations of 100 would take many minutes.
    let mut child = Command::new(env!("CARGO_BIN_EXE_tessera"))
        .args([
            "tune",
            "examples/paper/gconv.tc",
            "--size",
            "N=2",
            "--size",
            "G=4",
            "--size",
            "C=4",
            "--size",
            "F=4",
            "--size",
            "H=12",
            "--size",
            "W=12",
            "--size",
            "KH=3",
            "--size",
            "KW=3",
            "--population",
            "100",
            "--budget",
            "3600",
        ])
        .env("TESSERA_CACHE_DIR", &cache)
        .current_dir(testkit::root())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("tessera runs");
    std::thread::sleep(Duration::from_secs(12));
    let signalled = Instant::now();
    let status = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(status.success());
    let mut out = String::new();
    let mut err = String::new();
    child.stdout.take().map(|mut p| p.read_to_string(&mut out));
    child.stderr.take().map(|mut p| p.read_to_string(&mut err));
    let code = child.wait().expect("tessera ends").code();
    assert!(
        signalled.elapsed() < Duration::from_secs(15),
        "took {:?} to stop",
        signalled.elapsed()
    );
    // Stopped during the search, it reports what it found; stopped while
    // the untuned kernel was measured (a slow machine), it says so.
    match code {
        Some(0) => {
            assert!(
                out.starts_with("stopped by Ctrl-C; what was found so far:\ngconv: untuned "),
                "{out}"
            );
            assert!(out.contains("best "), "{out}");
        }
        Some(1) => assert!(
            err.contains("stopped before the untuned kernel was measured"),
            "{err}"
        ),
        other => panic!("exit {other:?}: {out}{err}"),
    }
}

#[test]
fn nothing_to_tune_and_bad_arguments_are_refused() {
    let cache = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("tune-cli-refused-{}", std::process::id()));
    std::fs::create_dir_all(&cache).expect("a directory");
    // A scalar parameter has no value to measure the kernel with.
    let scaled = cache.join("scaled.tc");
    std::fs::write(
        &scaled,
        "def scaled(float(N) A, float s) -> (B) {\n  B(i) = A(i) * s where i in 0:N\n}\n",
    )
    .expect("written");
    let scaled = scaled.to_string_lossy().into_owned();
    // tmm at sizes whose product the matmul library runs whole.
    let tmm64 = [
        "tune",
        "examples/paper/tmm.tc",
        "--size",
        "M=64",
        "--size",
        "K=64",
        "--size",
        "N=64",
    ];
    let unknown_constant = [&tmm64[..], &["--constant", "W"]].concat();
    let cases: [(&[&str], &str); 7] = [
        (
            &["tune", &scaled, "--size", "N=4096", "--generations", "1"],
            "`scaled` cannot be tuned: scalar parameter `s` has no value",
        ),
        (&tmm64, "has nothing to tune at these sizes"),
        (
            &["tune", "examples/paper/tmm.tc", "--budget", "0"],
            "--budget must be a positive number of seconds",
        ),
        (
            &["tune", "examples/paper/tmm.tc", "--budget", "1e30"],
            "--budget must be a positive number of seconds, not 1000000000000000000000000000000",
        ),
        (&unknown_constant, "def `tmm` has no parameter `W`"),
        (
            &["tune", "examples/python/quickstart.py"],
            "tuning Python functions is not built yet",
        ),
        (
            &[
                "tune",
                "tests/onnx/fixtures/conv_pad1_bias/model.onnx",
                "--constant",
                "W",
            ],
            "`--constant` is for TC inputs: a model's initializers are its constants",
        ),
    ];
    for (args, want) in cases {
        let (code, _, err) = tessera(&cache, args);
        assert_eq!(code, 1, "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
    }
}
