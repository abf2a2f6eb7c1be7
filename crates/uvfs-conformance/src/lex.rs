//! Splits one line of a case file into tokens: bare words and quoted strings, with `#`
//! comments, backslash escapes and `{rep:N:TEXT}` expansion (CASES.md, "Files").

/// One word of a case line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Token {
    /// The bytes after escape processing and `{rep:N:TEXT}` expansion.
    pub bytes: Vec<u8>,
    /// Whether the word was a quoted string (data arguments must be quoted).
    pub quoted: bool,
}

impl Token {
    /// The token as text, for error messages and symbolic names.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.bytes).into_owned()
    }
}

/// Whether backslash escapes are processed while expanding (only inside quoted strings).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Escapes {
    Process,
    Literal,
}

/// Largest expansion of one `{rep:N:TEXT}`; keeps a typo from allocating gigabytes.
const MAX_REP_BYTES: usize = 1 << 24;

/// Splits `line` into tokens.
///
/// # Errors
/// A message for an unterminated string, a bad escape or a malformed `{rep:...}`.
pub fn tokenize(line: &str) -> Result<Vec<Token>, String> {
    let b = line.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            c if c.is_ascii_whitespace() => i += 1,
            b'#' => break,
            b'"' => {
                let start = i + 1;
                let mut j = start;
                while j < b.len() && b[j] != b'"' {
                    j += if b[j] == b'\\' { 2 } else { 1 };
                }
                if j >= b.len() {
                    return Err("unterminated quoted string".into());
                }
                out.push(Token {
                    bytes: expand(&b[start..j], Escapes::Process)?,
                    quoted: true,
                });
                i = j + 1;
            }
            _ => {
                let start = i;
                while i < b.len() && !b[i].is_ascii_whitespace() && b[i] != b'#' {
                    i += 1;
                }
                out.push(Token {
                    bytes: expand(&b[start..i], Escapes::Literal)?,
                    quoted: false,
                });
            }
        }
    }
    Ok(out)
}

/// Expands `{rep:N:TEXT}` (TEXT ends at the first `}`) and, with [`Escapes::Process`], the
/// escapes `\n \t \\ \" \0 \xNN`.
fn expand(raw: &[u8], escapes: Escapes) -> Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        if raw[i..].starts_with(b"{rep:") {
            let body = &raw[i + 5..];
            let close = body
                .iter()
                .position(|&c| c == b'}')
                .ok_or("unterminated {rep:N:TEXT}")?;
            let colon = body[..close]
                .iter()
                .position(|&c| c == b':')
                .ok_or("{rep:N:TEXT} needs N:TEXT")?;
            let n: usize = std::str::from_utf8(&body[..colon])
                .ok()
                .and_then(|s| s.parse().ok())
                .ok_or("bad repeat count in {rep:N:TEXT}")?;
            let text = expand(&body[colon + 1..close], escapes)?;
            if n.saturating_mul(text.len()) > MAX_REP_BYTES {
                return Err(format!("{{rep:...}} expands past {MAX_REP_BYTES} bytes"));
            }
            for _ in 0..n {
                out.extend_from_slice(&text);
            }
            i += 5 + close + 1;
            continue;
        }
        if escapes == Escapes::Process && raw[i] == b'\\' {
            let c = *raw.get(i + 1).ok_or("backslash at end of string")?;
            i += 2;
            out.push(match c {
                b'n' => b'\n',
                b't' => b'\t',
                b'\\' => b'\\',
                b'"' => b'"',
                b'0' => 0,
                b'x' => {
                    let hex = raw.get(i..i + 2).ok_or("\\x needs two hex digits")?;
                    i += 2;
                    std::str::from_utf8(hex)
                        .ok()
                        .and_then(|h| u8::from_str_radix(h, 16).ok())
                        .ok_or("\\x needs two hex digits")?
                }
                other => return Err(format!("unknown escape \\{}", other as char)),
            });
            continue;
        }
        out.push(raw[i]);
        i += 1;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: &str) -> Vec<Vec<u8>> {
        tokenize(line)
            .expect("valid line")
            .into_iter()
            .map(|t| t.bytes)
            .collect()
    }

    #[test]
    fn comments_end_the_line_outside_quotes_only() {
        assert_eq!(
            words(r#"write $f "a # b" # note"#),
            vec![b"write".to_vec(), b"$f".to_vec(), b"a # b".to_vec()]
        );
    }

    #[test]
    fn quoted_strings_take_escapes() {
        assert_eq!(
            words(r#""a\n\t\\\"\0\x41""#),
            vec![b"a\n\t\\\"\0A".to_vec()]
        );
    }

    #[test]
    fn rep_expands_in_bare_words_and_strings() {
        assert_eq!(words("/d/{rep:3:ab}")[0], b"/d/ababab");
        assert_eq!(words(r#""{rep:2:\x00}x""#)[0], b"\0\0x");
        assert_eq!(words("{rep:2100:a/}")[0].len(), 4200);
    }

    #[test]
    fn malformed_input_is_an_error() {
        assert!(tokenize(r#"write "abc"#).is_err());
        assert!(tokenize(r#""\q""#).is_err());
        assert!(tokenize("{rep:x:a}").is_err());
    }
}
