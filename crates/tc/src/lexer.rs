//! The lexer: TC source text to tokens.
//!
//! Never panics and accepts arbitrary text: anything it cannot read becomes
//! an error diagnostic and lexing continues after it. Numbers are lexed
//! strictly (C syntax: `3E-5` is a float; `0x1f`, `1e` and `1.2.3` are
//! errors). Identifiers follow the TC paper's grammar, so they may start with
//! digits as long as they contain a letter or underscore (`2LUT`).

use crate::diag::{Diagnostic, Span};

#[derive(Clone, Debug, PartialEq)]
pub enum Tok {
    Ident(String),
    Int(i64),
    Float(f64),
    /// Punctuation and operators, by their spelling: `( ) { } , : ; ? . -> =
    /// += -= *= +=! *=! == != < <= > >= && || + - * / % !`.
    Punct(&'static str),
    Eof,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Token {
    pub tok: Tok,
    pub span: Span,
    /// Whether this is the first token on its line (statement boundaries).
    pub line_start: bool,
}

const PUNCTS: [&str; 29] = [
    "<=>", "+=!", "*=!", "->", "+=", "*=", "==", "!=", "<=", ">=", "&&", "||", "(", ")", "{", "}",
    ",", ":", ";", "?", ".", "=", "<", ">", "+", "-", "*", "/", "%",
];

pub fn lex(src: &str) -> (Vec<Token>, Vec<Diagnostic>) {
    let bytes = src.as_bytes();
    let mut toks: Vec<Token> = Vec::new();
    let mut errs = Vec::new();
    let mut i = 0;
    let mut line_start = true;
    while i < bytes.len() {
        let c = bytes[i];
        if c == b'\n' {
            line_start = true;
            i += 1;
            continue;
        }
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        if c == b'#' {
            while i < bytes.len() && bytes[i] != b'\n' {
                i += 1;
            }
            continue;
        }
        let start = i;
        let push = |tok: Tok, end: usize, toks: &mut Vec<Token>| {
            toks.push(Token {
                tok,
                span: Span::new(start, end),
                line_start,
            });
        };
        // The paper writes the arrow as a Unicode character.
        if src[i..].starts_with('→') {
            i += '→'.len_utf8();
            push(Tok::Punct("->"), i, &mut toks);
            line_start = false;
            continue;
        }
        let after_name = matches!(
            toks.last(),
            Some(Token {
                tok: Tok::Ident(_),
                ..
            })
        );
        if c.is_ascii_digit()
            || (c == b'.' && !after_name && bytes.get(i + 1).is_some_and(u8::is_ascii_digit))
        {
            let (tok, end, err) = lex_number(src, i);
            if let Some(e) = err {
                errs.push(e);
            }
            push(tok, end, &mut toks);
            i = end;
            line_start = false;
            continue;
        }
        if c.is_ascii_alphabetic() || c == b'_' {
            let mut j = i;
            while j < bytes.len() && (bytes[j].is_ascii_alphanumeric() || bytes[j] == b'_') {
                j += 1;
            }
            push(Tok::Ident(src[i..j].to_string()), j, &mut toks);
            i = j;
            line_start = false;
            continue;
        }
        if let Some(p) = PUNCTS.iter().find(|p| src[i..].starts_with(**p)) {
            // `!` alone and `!=` are handled here too via the list below.
            i += p.len();
            push(Tok::Punct(p), i, &mut toks);
            line_start = false;
            continue;
        }
        if c == b'!' {
            i += 1;
            push(Tok::Punct("!"), i, &mut toks);
            line_start = false;
            continue;
        }
        let ch = src[i..].chars().next().unwrap_or('\u{fffd}');
        let end = i + ch.len_utf8();
        errs.push(
            Diagnostic::error(
                format!("unexpected character `{}`", ch.escape_debug()),
                Span::new(i, end),
            )
            .with_label("not part of the TC language"),
        );
        i = end;
    }
    toks.push(Token {
        tok: Tok::Eof,
        span: Span::new(src.len(), src.len()),
        line_start: true,
    });
    (toks, errs)
}

/// Lexes a token that starts with a digit (or `.digit`): a number, or an
/// identifier such as `2LUT`.
fn lex_number(src: &str, start: usize) -> (Tok, usize, Option<Diagnostic>) {
    let b = src.as_bytes();
    let word_end = {
        let mut j = start;
        while j < b.len() && (b[j].is_ascii_alphanumeric() || b[j] == b'_' || b[j] == b'.') {
            j += 1;
        }
        // Include an exponent sign: `3E-5`.
        if j < b.len()
            && (b[j] == b'-' || b[j] == b'+')
            && j > start
            && matches!(b[j - 1], b'e' | b'E')
            && b.get(j + 1).is_some_and(u8::is_ascii_digit)
            && src[start..j - 1]
                .bytes()
                .all(|c| c.is_ascii_digit() || c == b'.')
        {
            j += 1;
            while j < b.len() && (b[j].is_ascii_alphanumeric() || b[j] == b'_' || b[j] == b'.') {
                j += 1;
            }
        }
        j
    };
    let word = &src[start..word_end];
    let span = Span::new(start, word_end);
    let bad = |msg: String, help: &str| {
        (
            Tok::Int(0),
            word_end,
            Some(Diagnostic::error(msg, span).with_help(help.to_string())),
        )
    };
    let lower = word.to_ascii_lowercase();
    if lower.starts_with("0x") || lower.starts_with("0b") || lower.starts_with("0o") {
        return bad(
            format!("`{word}` is not a number: hexadecimal, binary and octal literals are not supported"),
            "write the value in decimal",
        );
    }
    // A digit-led word without `.` that is not a decimal number is a name.
    let is_decimal_float = |w: &str| -> bool {
        let w = w
            .strip_suffix(['f', 'F'])
            .filter(|r| r.contains(['.', 'e', 'E']))
            .unwrap_or(w);
        let (mant, exp) = match w.find(['e', 'E']) {
            Some(k) => (&w[..k], Some(&w[k + 1..])),
            None => (w, None),
        };
        let mant_ok = {
            let mut parts = mant.splitn(2, '.');
            let a = parts.next().unwrap_or("");
            let f = parts.next();
            a.bytes().all(|c| c.is_ascii_digit())
                && f.is_none_or(|f| f.bytes().all(|c| c.is_ascii_digit()))
                && (!a.is_empty() || f.is_some_and(|f| !f.is_empty()))
                && (f.is_some() || exp.is_some())
        };
        let exp_ok = exp.is_none_or(|e| {
            let e = e.strip_prefix(['+', '-']).unwrap_or(e);
            !e.is_empty() && e.bytes().all(|c| c.is_ascii_digit())
        });
        mant_ok && exp_ok
    };
    if word.bytes().all(|c| c.is_ascii_digit()) {
        return match word.parse::<i64>() {
            Ok(v) => (Tok::Int(v), word_end, None),
            Err(_) => bad(
                format!("integer literal `{word}` does not fit in 64 bits"),
                "use a smaller value",
            ),
        };
    }
    if is_decimal_float(word) {
        let digits = word.strip_suffix(['f', 'F']).unwrap_or(word);
        return match digits.parse::<f64>() {
            Ok(v) if v.is_finite() => (Tok::Float(v), word_end, None),
            _ => bad(
                format!("float literal `{word}` is out of range"),
                "use a smaller value",
            ),
        };
    }
    let is_ident =
        !word.contains('.') && word.bytes().any(|c| c.is_ascii_alphabetic() || c == b'_');
    let looks_numeric = word.bytes().next().is_some_and(|c| c.is_ascii_digit())
        && word
            .trim_start_matches(|c: char| c.is_ascii_digit())
            .starts_with(['e', 'E'])
        && word.len() <= 24
        && word.trim_start_matches(|c: char| c.is_ascii_digit())[1..]
            .bytes()
            .all(|c| c.is_ascii_digit() || c == b'+' || c == b'-');
    if is_ident && !looks_numeric {
        return (Tok::Ident(word.to_string()), word_end, None);
    }
    bad(
        format!("`{word}` is not a valid number"),
        "numbers are written in C syntax: `42`, `1.5`, `.5`, `3e-5`, `1.0f`",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(s: &str) -> Vec<Tok> {
        let (t, e) = lex(s);
        assert!(e.is_empty(), "{e:?}");
        t.into_iter().map(|t| t.tok).collect()
    }

    #[test]
    fn numbers_are_strict() {
        assert_eq!(toks("3E-5")[0], Tok::Float(3e-5));
        assert_eq!(toks(".5")[0], Tok::Float(0.5));
        assert_eq!(toks("1.")[0], Tok::Float(1.0));
        assert_eq!(toks("1.0f")[0], Tok::Float(1.0));
        assert_eq!(toks("2LUT")[0], Tok::Ident("2LUT".into()));
        for bad in ["0x1f", "1e", "1.2.3", "1e+", "99999999999999999999"] {
            let (_, e) = lex(bad);
            assert_eq!(e.len(), 1, "{bad} should be rejected");
        }
    }

    #[test]
    fn reduction_operators_and_dims() {
        assert_eq!(
            toks("C(i) +=! X.1"),
            vec![
                Tok::Ident("C".into()),
                Tok::Punct("("),
                Tok::Ident("i".into()),
                Tok::Punct(")"),
                Tok::Punct("+=!"),
                Tok::Ident("X".into()),
                Tok::Punct("."),
                Tok::Int(1),
                Tok::Eof
            ]
        );
    }
}
