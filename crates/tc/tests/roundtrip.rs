//! Print → parse round trip on every shipped TC file: checking the printed
//! program gives back exactly the same IR.

use std::path::{Path, PathBuf};

fn tc_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            tc_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "tc") {
            out.push(p);
        }
    }
}

#[test]
fn every_example_and_the_prelude_round_trip() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut files = Vec::new();
    tc_files(&root.join("examples"), &mut files);
    tc_files(&root.join("ops"), &mut files);
    assert!(
        files.len() >= 10,
        "expected the shipped examples, found {files:?}"
    );
    let mut checked = 0;
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        let Ok(first) = tc::check_source(&text) else {
            continue;
        };
        let printed = ir::print_program(&first.program);
        let second = tc::check_source(&printed).unwrap_or_else(|d| {
            panic!(
                "{}: printed form does not check:\n{printed}\n{}",
                f.display(),
                tc::render_diagnostics(&d, "printed", &printed)
            )
        });
        assert_eq!(
            first.program,
            second.program,
            "{}: round trip changed the IR; printed:\n{printed}",
            f.display()
        );
        assert_eq!(
            printed,
            ir::print_program(&second.program),
            "{}: printing is not stable",
            f.display()
        );
        checked += 1;
    }
    assert!(checked >= 10);
}
