//! `tojson` as transformers defines it for chat templates: Python's
//! `json.dumps(x, ensure_ascii=False, indent=indent, separators=separators, sort_keys=sort_keys)`,
//! so that tool definitions render byte for byte as the model saw them in training. (minijinja's
//! built-in `tojson` is Jinja2's HTML-safe variant: compact, and `<`, `>`, `&`, `'` escaped.)

use minijinja::value::{Kwargs, Value, ValueKind};
use minijinja::{Error, ErrorKind};

struct Style {
    indent: Option<usize>,
    item_sep: String,
    key_sep: String,
    sort_keys: bool,
}

pub(super) fn tojson(value: &Value, indent: Option<usize>, kwargs: Kwargs) -> Result<Value, Error> {
    let indent = match indent {
        Some(indent) => Some(indent),
        None => kwargs.get::<Option<usize>>("indent")?,
    };
    let separators: Option<Vec<String>> = kwargs.get("separators")?;
    let sort_keys = kwargs.get::<Option<bool>>("sort_keys")?.unwrap_or(false);
    kwargs.assert_all_used()?;
    let (item_sep, key_sep) = match separators.as_deref() {
        Some([item, key]) => (item.clone(), key.clone()),
        Some(_) => return Err(invalid("tojson: separators must be a pair of strings")),
        // Python's defaults: no space before a newline when indenting.
        None if indent.is_some() => (",".into(), ": ".into()),
        None => (", ".into(), ": ".into()),
    };
    let style = Style {
        indent,
        item_sep,
        key_sep,
        sort_keys,
    };
    let mut out = String::new();
    write_value(&mut out, value, &style, 0)?;
    Ok(Value::from_safe_string(out))
}

fn invalid(message: &str) -> Error {
    Error::new(ErrorKind::InvalidOperation, message.to_string())
}

fn write_value(out: &mut String, value: &Value, style: &Style, depth: usize) -> Result<(), Error> {
    match value.kind() {
        ValueKind::Undefined | ValueKind::None => out.push_str("null"),
        ValueKind::Bool => out.push_str(if value.is_true() { "true" } else { "false" }),
        ValueKind::Number => out.push_str(&value.to_string()),
        ValueKind::String => write_string(out, value.as_str().unwrap_or_default()),
        ValueKind::Map => write_map(out, value, style, depth)?,
        ValueKind::Seq | ValueKind::Iterable => {
            let items: Vec<Value> = value.try_iter()?.collect();
            write_container(out, ('[', ']'), items.len(), style, depth, |out, i| {
                write_value(out, &items[i], style, depth + 1)
            })?;
        }
        _ => {
            return Err(invalid(&format!(
                "tojson: cannot serialize a {}",
                value.kind()
            )))
        }
    }
    Ok(())
}

fn write_map(out: &mut String, map: &Value, style: &Style, depth: usize) -> Result<(), Error> {
    let mut keys: Vec<Value> = map.try_iter()?.collect();
    if style.sort_keys {
        keys.sort();
    }
    write_container(out, ('{', '}'), keys.len(), style, depth, |out, i| {
        let key = &keys[i];
        match key.as_str() {
            Some(s) => write_string(out, s),
            None => write_string(out, &key.to_string()),
        }
        out.push_str(&style.key_sep);
        write_value(out, &map.get_item(key)?, style, depth + 1)
    })
}

/// Writes `len` items between `open` and `close`, separated and indented as Python does.
fn write_container(
    out: &mut String,
    (open, close): (char, char),
    len: usize,
    style: &Style,
    depth: usize,
    mut item: impl FnMut(&mut String, usize) -> Result<(), Error>,
) -> Result<(), Error> {
    out.push(open);
    if len == 0 {
        out.push(close);
        return Ok(());
    }
    let newline = |out: &mut String, level: usize| {
        if let Some(width) = style.indent {
            out.push('\n');
            out.push_str(&" ".repeat(width * level));
        }
    };
    for i in 0..len {
        if i > 0 {
            out.push_str(&style.item_sep);
        }
        newline(out, depth + 1);
        item(out, i)?;
    }
    newline(out, depth);
    out.push(close);
    Ok(())
}

/// A JSON string with only what `ensure_ascii=False` escapes: quotes, backslashes, controls.
fn write_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{08}' => out.push_str("\\b"),
            '\u{0c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}
