//! Component commands as one string each: words split on whitespace, with `'…'` and `"…"`
//! quoting and `\` escapes as a POSIX shell reads them (no expansion of any kind).

use crate::process::AgentCommand;

/// Splits `line` into words; `None` for an unterminated quote or a trailing `\`.
///
/// ```
/// use acp_runtime::conductor::command_line::split;
/// assert_eq!(split(r#"agent --name "two words" 'a"b' c\ d"#).unwrap(), ["agent", "--name", "two words", "a\"b", "c d"]);
/// assert!(split("agent 'open").is_none());
/// ```
pub fn split(line: &str) -> Option<Vec<String>> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                loop {
                    match chars.next()? {
                        '\'' => break,
                        c => word.push(c),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next()? {
                        '"' => break,
                        '\\' => match chars.next()? {
                            c @ ('"' | '\\' | '$' | '`') => word.push(c),
                            c => {
                                word.push('\\');
                                word.push(c);
                            }
                        },
                        c => word.push(c),
                    }
                }
            }
            '\\' => {
                in_word = true;
                word.push(chars.next()?);
            }
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    Some(words)
}

/// The command a component string names; an error says what is wrong with it.
///
/// ```
/// use acp_runtime::conductor::command_line::command;
/// assert!(command("my-agent --stdio").is_ok());
/// assert!(command("  ").is_err());
/// ```
#[cfg(unix)]
pub fn command(line: &str) -> Result<AgentCommand, String> {
    let words = split(line).ok_or_else(|| format!("unterminated quote or escape in `{line}`"))?;
    let (program, args) = words
        .split_first()
        .ok_or_else(|| "an empty component command".to_owned())?;
    Ok(AgentCommand::new(program).args(args))
}
