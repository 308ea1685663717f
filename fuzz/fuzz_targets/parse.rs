//! Arbitrary bytes, read as UTF-8 (lossily), through the TC front end: lex,
//! parse, check and infer must never panic nor overflow the stack, and every
//! rejection must render as located `error:` diagnostics.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Err(diags) = tc::check_source(&text) {
        assert!(!diags.is_empty(), "a rejection without diagnostics");
        let out = tc::render_diagnostics(&diags, "fuzz.tc", &text);
        assert!(out.starts_with("error: "), "diagnostics render as:\n{out}");
    }
});
