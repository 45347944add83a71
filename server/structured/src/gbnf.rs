//! GBNF (llama.cpp's grammar format, which vLLM's examples and xgrammar's EBNF share) → the
//! Lark that llguidance compiles, as vLLM's guidance backend converts it.
//!
//! GBNF: `name ::= body` rules (a rule runs to the next `name ::=`), `root` first to match;
//! bodies of `"literals"` (escapes `\n \r \t \\ \" \xHH \uHHHH \UHHHHHHHH`), `[classes]` (with
//! `^`, ranges and the same escapes), `.` (any character), rule names, `( )`, `|`, `* + ?`,
//! `{m}`, `{m,}`, `{m,n}`, `{,n}`, and `#` comments. The body maps token by token onto Lark's
//! syntax: literals become JSON strings, classes and `.` regexes, and each rule `g_<name>` (Lark
//! rule names are lowercase; the prefix keeps them clear of Lark's own names such as `start`).

use std::collections::HashMap;

/// Whether a grammar is GBNF: its first rule is written `name ::=` (Lark writes `name:`).
pub fn is_gbnf(grammar: &str) -> bool {
    let first_line = grammar
        .lines()
        .map(str::trim)
        .find(|line| !line.is_empty() && !line.starts_with('#') && !line.starts_with("//"));
    first_line.is_some_and(|line| {
        line.split_once("::=").is_some_and(|(name, _)| {
            let name = name.trim();
            !name.is_empty() && name.chars().all(is_name_char)
        })
    })
}

/// The Lark grammar of a GBNF grammar, or what is wrong with it.
pub fn gbnf_to_lark(grammar: &str) -> Result<String, String> {
    let tokens = tokenize(grammar)?;
    let rules = split_rules(&tokens)?;
    let names = rule_names(&rules)?;
    if !names.contains_key("root") {
        return Err("GBNF grammar has no `root` rule".into());
    }
    let mut lark = format!("start: {}\n", names["root"]);
    for (name, body) in &rules {
        if body.is_empty() {
            return Err(format!("GBNF rule `{name}` is empty"));
        }
        let pieces = body
            .iter()
            .map(|token| lark_piece(token, &names))
            .collect::<Result<Vec<_>, _>>()?;
        lark.push_str(&format!("{}: {}\n", names[*name], pieces.join(" ")));
    }
    Ok(lark)
}

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Name(String),
    Defines,
    Literal(String),
    Class {
        negated: bool,
        items: Vec<(char, char)>,
    },
    AnyChar,
    /// `( ) | * + ?` and a normalized `{m,n}`, written as they are.
    Syntax(String),
}

fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '-' || c == '_'
}

fn tokenize(grammar: &str) -> Result<Vec<Token>, String> {
    let chars: Vec<char> = grammar.chars().collect();
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            _ if c.is_whitespace() => i += 1,
            '#' => {
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
            }
            ':' if chars[i..].starts_with(&[':', ':', '=']) => {
                tokens.push(Token::Defines);
                i += 3;
            }
            '"' => {
                let (text, next) = literal(&chars, i + 1)?;
                tokens.push(Token::Literal(text));
                i = next;
            }
            '[' => {
                let (token, next) = class(&chars, i + 1)?;
                tokens.push(token);
                i = next;
            }
            '{' => {
                let end = (i..chars.len())
                    .find(|&j| chars[j] == '}')
                    .ok_or("GBNF: `{` without `}`")?;
                let inner: String = chars[i + 1..end].iter().collect();
                tokens.push(Token::Syntax(repetition(&inner)?));
                i = end + 1;
            }
            '.' => {
                tokens.push(Token::AnyChar);
                i += 1;
            }
            '(' | ')' | '|' | '*' | '+' | '?' => {
                tokens.push(Token::Syntax(c.to_string()));
                i += 1;
            }
            _ if is_name_char(c) => {
                let start = i;
                while i < chars.len() && is_name_char(chars[i]) {
                    i += 1;
                }
                tokens.push(Token::Name(chars[start..i].iter().collect()));
            }
            _ => return Err(format!("GBNF: unexpected `{c}` at character {i}")),
        }
    }
    Ok(tokens)
}

/// One escaped or plain character at `chars[i]`; returns it and the next index.
fn escaped_char(chars: &[char], i: usize) -> Result<(char, usize), String> {
    let c = *chars.get(i).ok_or("GBNF: unfinished literal or class")?;
    if c != '\\' {
        return Ok((c, i + 1));
    }
    let kind = *chars.get(i + 1).ok_or("GBNF: unfinished escape")?;
    let hex = |len: usize| -> Result<(char, usize), String> {
        let digits: String = chars
            .get(i + 2..i + 2 + len)
            .unwrap_or_default()
            .iter()
            .collect();
        u32::from_str_radix(&digits, 16)
            .ok()
            .filter(|_| digits.len() == len)
            .and_then(char::from_u32)
            .map(|c| (c, i + 2 + len))
            .ok_or_else(|| format!("GBNF: bad escape `\\{kind}{digits}`"))
    };
    match kind {
        'n' => Ok(('\n', i + 2)),
        'r' => Ok(('\r', i + 2)),
        't' => Ok(('\t', i + 2)),
        'x' => hex(2),
        'u' => hex(4),
        'U' => hex(8),
        other => Ok((other, i + 2)),
    }
}

fn literal(chars: &[char], mut i: usize) -> Result<(String, usize), String> {
    let mut text = String::new();
    loop {
        match chars.get(i) {
            None => return Err("GBNF: a literal has no closing `\"`".into()),
            Some('"') => return Ok((text, i + 1)),
            Some(_) => {
                let (c, next) = escaped_char(chars, i)?;
                text.push(c);
                i = next;
            }
        }
    }
}

fn class(chars: &[char], mut i: usize) -> Result<(Token, usize), String> {
    let negated = chars.get(i) == Some(&'^');
    if negated {
        i += 1;
    }
    let mut items = Vec::new();
    loop {
        match chars.get(i) {
            None => return Err("GBNF: a class has no closing `]`".into()),
            Some(']') => return Ok((Token::Class { negated, items }, i + 1)),
            Some(_) => {
                let (low, next) = escaped_char(chars, i)?;
                i = next;
                let mut high = low;
                if chars.get(i) == Some(&'-') && chars.get(i + 1).is_some_and(|&c| c != ']') {
                    (high, i) = escaped_char(chars, i + 1)?;
                }
                if high < low {
                    return Err(format!("GBNF: class range {low:?}-{high:?} is reversed"));
                }
                items.push((low, high));
            }
        }
    }
}

/// `m`, `m,`, `m,n`, `,n` → Lark's `{m,n}` forms.
fn repetition(inner: &str) -> Result<String, String> {
    let bad = || format!("GBNF: bad repetition `{{{inner}}}`");
    let number = |s: &str| s.trim().parse::<u32>().map_err(|_| bad());
    let (min, max) = match inner.split_once(',') {
        None => (number(inner)?, Some(number(inner)?)),
        Some((min, max)) => {
            let min = if min.trim().is_empty() {
                0
            } else {
                number(min)?
            };
            let max = if max.trim().is_empty() {
                None
            } else {
                Some(number(max)?)
            };
            (min, max)
        }
    };
    match max {
        Some(0) => Err(format!("GBNF: repetition `{{{inner}}}` allows nothing")),
        Some(max) if max < min => Err(bad()),
        Some(max) => Ok(format!("{{{min},{max}}}")),
        None => Ok(format!("{{{min},}}")),
    }
}

/// Each rule's name and body tokens, in order.
fn split_rules(tokens: &[Token]) -> Result<Vec<(&str, &[Token])>, String> {
    let starts: Vec<usize> = (0..tokens.len())
        .filter(|&i| {
            matches!(tokens[i], Token::Name(_)) && tokens.get(i + 1) == Some(&Token::Defines)
        })
        .collect();
    if starts.first() != Some(&0) {
        return Err("GBNF: expected `name ::=` first".into());
    }
    let mut rules = Vec::new();
    for (k, &start) in starts.iter().enumerate() {
        let end = starts.get(k + 1).copied().unwrap_or(tokens.len());
        let Token::Name(name) = &tokens[start] else {
            unreachable!("rule starts are names");
        };
        let body = &tokens[start + 2..end];
        if body.contains(&Token::Defines) {
            return Err(format!("GBNF: misplaced `::=` in rule `{name}`"));
        }
        rules.push((name.as_str(), body));
    }
    Ok(rules)
}

/// Each GBNF rule name's Lark name: `g_` + lowercase, `-` kept, distinct.
fn rule_names<'a>(rules: &[(&'a str, &[Token])]) -> Result<HashMap<&'a str, String>, String> {
    let mut names: HashMap<&str, String> = HashMap::new();
    for (name, _) in rules {
        if names.contains_key(name) {
            return Err(format!("GBNF: rule `{name}` is defined twice"));
        }
        let base = format!("g_{}", name.to_ascii_lowercase().replace('-', "_"));
        let mut lark = base.clone();
        let mut suffix = 1;
        while names.values().any(|taken| taken == &lark) {
            suffix += 1;
            lark = format!("{base}_{suffix}");
        }
        names.insert(name, lark);
    }
    Ok(names)
}

fn lark_piece(token: &Token, names: &HashMap<&str, String>) -> Result<String, String> {
    Ok(match token {
        Token::Name(name) => names
            .get(name.as_str())
            .cloned()
            .ok_or_else(|| format!("GBNF: rule `{name}` is used but not defined"))?,
        Token::Literal(text) => serde_json::to_string(text).map_err(|e| e.to_string())?,
        Token::Class { negated, items } => {
            let hex = |c: char| format!("\\x{{{:X}}}", u32::from(c));
            let ranges: String = items
                .iter()
                .map(|&(low, high)| match low == high {
                    true => hex(low),
                    false => format!("{}-{}", hex(low), hex(high)),
                })
                .collect();
            format!("/[{}{ranges}]/", if *negated { "^" } else { "" })
        }
        Token::AnyChar => "/(?s:.)/".to_string(),
        Token::Syntax(text) => text.clone(),
        Token::Defines => unreachable!("split_rules leaves no `::=` in bodies"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gbnf_is_told_from_lark_by_its_first_rule() {
        assert!(is_gbnf("# answer\nroot ::= \"yes\" | \"no\""));
        assert!(is_gbnf("select-stmt ::= \"SELECT\""));
        assert!(!is_gbnf("start: \"a ::= b\""));
        assert!(!is_gbnf("// lark\nstart: x\nx: \"::=\""));
    }

    #[test]
    fn rules_literals_classes_and_repetitions_map_onto_lark() {
        let gbnf = r#"
            root ::= greeting ( " " name )? "\n"   # a comment
            greeting ::= "hi" | "h\"ey\u00e9"
            name ::= [A-Z] [a-z\-]{1,8} digit-run*
            digit-run ::= [^0-4] . {2,} | [0-9]{,3}
        "#;
        let lark = gbnf_to_lark(gbnf).expect("valid");
        let lines: Vec<&str> = lark.lines().collect();
        assert_eq!(lines[0], "start: g_root");
        assert_eq!(lines[1], r#"g_root: g_greeting ( " " g_name ) ? "\n""#);
        assert_eq!(lines[2], r#"g_greeting: "hi" | "h\"eyé""#);
        assert_eq!(
            lines[3],
            r"g_name: /[\x{41}-\x{5A}]/ /[\x{61}-\x{7A}\x{2D}]/ {1,8} g_digit_run *"
        );
        assert_eq!(
            lines[4],
            r"g_digit_run: /[^\x{30}-\x{34}]/ /(?s:.)/ {2,} | /[\x{30}-\x{39}]/ {0,3}"
        );
    }

    #[test]
    fn broken_grammars_are_refused_with_the_reason() {
        for (gbnf, words) in [
            ("answer ::= \"x\"", "no `root`"),
            ("root ::= missing", "not defined"),
            ("root ::= \"open", "closing"),
            ("root ::= [a-", "closing"),
            ("root ::= \"a\"{0}", "allows nothing"),
            ("root ::= \"a\" ; ", "unexpected"),
            ("root ::= \"a\"\nroot ::= \"b\"", "twice"),
            ("root ::=", "empty"),
        ] {
            let error = gbnf_to_lark(gbnf).expect_err(gbnf);
            assert!(error.contains(words), "{gbnf}: {error}");
        }
    }
}
