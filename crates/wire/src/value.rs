//! A parameter value bound to a placeholder, as the protocol clients send it.

/// A parameter value bound to a placeholder.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// An integer (bound as int2/int4/int8/numeric/text as the server expects).
    Int(i64),
    /// A string.
    Text(String),
}

impl Value {
    /// The value as a SQL literal (for `--no-prepare`); MySQL also needs
    /// backslashes doubled, PostgreSQL (standard_conforming_strings) does not.
    pub fn literal(&self, escape_backslash: bool) -> String {
        match self {
            Value::Int(i) => i.to_string(),
            Value::Text(s) if escape_backslash => format!("'{}'", s.replace('\\', "\\\\").replace('\'', "''")),
            Value::Text(s) => format!("'{}'", s.replace('\'', "''")),
        }
    }
}
