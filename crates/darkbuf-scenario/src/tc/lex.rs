//! A tc script as lines of words, each word with its byte span in the text: a shell's
//! word splitting for what tc scripts contain (spaces, tabs, `#` comments, a trailing
//! `\` joining lines, single or double quotes around a word, `$VAR` rejected).

use super::TcError;
use std::ops::Range;

/// One word of a line and where it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Word {
    pub text: String,
    pub span: Range<usize>,
}

/// The commands of `text`: each a list of words, empty lines and comments left out.
pub fn lines(text: &str) -> Result<Vec<Vec<Word>>, TcError> {
    let mut out = Vec::new();
    let mut cur: Vec<Word> = Vec::new();
    let b = text.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'\n' | b';' => {
                if !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
                i += 1;
            }
            b' ' | b'\t' | b'\r' => i += 1,
            b'#' => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'\\' if matches!(b.get(i + 1), Some(b'\n')) => i += 2,
            b'\\' if b.get(i + 1) == Some(&b'\r') && b.get(i + 2) == Some(&b'\n') => i += 3,
            _ => {
                // A command's first word that does not lex is not tc at all (a file that
                // is not a tc script): say so without quoting the file's content.
                let (w, next) = word(text, i).map_err(|e| if cur.is_empty() { not_tc(i..i + 1) } else { e })?;
                cur.push(w);
                i = next;
            }
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    Ok(out)
}

/// The error for a line that does not start as a tc command. It quotes nothing of the
/// line: `tc_file` may name any file the user can read, and an error message should not
/// print a line of a file that is not a tc script (`/etc/shadow` run as root).
pub(crate) fn not_tc(span: Range<usize>) -> TcError {
    TcError::new(span, "not a tc command", "a tc line starts with `tc` (or qdisc, class, filter; `ip link` for an ifb)")
}

/// The word starting at `start`, and where the next one may start.
fn word(text: &str, start: usize) -> Result<(Word, usize), TcError> {
    let b = text.as_bytes();
    let mut s = String::new();
    let mut i = start;
    while i < b.len() && !matches!(b[i], b' ' | b'\t' | b'\r' | b'\n' | b';' | b'#') {
        match b[i] {
            q @ (b'\'' | b'"') => {
                let close = text[i + 1..].find(q as char).ok_or_else(|| {
                    TcError::new(i..i + 1, "an unterminated quote", "close the quote on the same line")
                })?;
                s.push_str(&text[i + 1..i + 1 + close]);
                i += close + 2;
            }
            b'$' | b'`' => {
                return Err(TcError::new(
                    i..i + 1,
                    format!("a shell expansion (`{}`): darkbuf reads tc lines, not a shell script", &text[i..].split_whitespace().next().unwrap_or("$")),
                    "write the value itself (e.g. 90mbit, eth0)",
                ))
            }
            b'\\' => {
                // An escaped character stands for itself.
                let c = text[i + 1..].chars().next().unwrap_or('\\');
                s.push(c);
                i += 1 + c.len_utf8();
            }
            _ => {
                let c = text[i..].chars().next().expect("in the text");
                s.push(c);
                i += c.len_utf8();
            }
        }
    }
    Ok((Word { text: s, span: start..i }, i))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(t: &str) -> Vec<Vec<String>> {
        lines(t).unwrap().into_iter().map(|l| l.into_iter().map(|w| w.text).collect()).collect()
    }

    #[test]
    fn words_lines_comments_and_continuations() {
        let t = "# SQM\ntc qdisc add dev eth0 root cake \\\n  bandwidth 90mbit # egress\n\ntc filter add dev eth0 parent ffff: u32 match u32 0 0 ; tc qdisc show\n";
        assert_eq!(
            texts(t),
            [
                vec!["tc", "qdisc", "add", "dev", "eth0", "root", "cake", "bandwidth", "90mbit"],
                vec!["tc", "filter", "add", "dev", "eth0", "parent", "ffff:", "u32", "match", "u32", "0", "0"],
                vec!["tc", "qdisc", "show"],
            ]
        );
        let l = lines("tc qdisc add dev 'eth 0' root").unwrap();
        assert_eq!((l[0][4].text.as_str(), l[0][4].span.clone()), ("eth 0", 17..24));
        let e = lines("tc qdisc add dev $IFACE root").unwrap_err();
        assert_eq!(e.span, 17..18);
    }
}
