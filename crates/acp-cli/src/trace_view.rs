//! The trace viewer: `acp trace view FILE...` writes one self-contained HTML page that draws
//! transcripts as a sequence diagram, and `acp --trace-view` serves the same page live while
//! the session runs (loopback only, a random token in its URL).
//!
//! `record` reads transcript lines, `model` turns them into the rows the page draws (the one
//! place that decides joins, turns, folds and errors), `summary` writes each row's short line,
//! `page` embeds rows in the page (`viewer.html`, `viewer.css`, `viewer.js`), `live` feeds a
//! running connection's rows to `http`'s loopback server.

mod feed;
mod http;
mod live;
pub mod model;
mod page;
pub mod record;
mod summary;

use std::path::{Path, PathBuf};

pub use live::LiveView;
pub use page::{Header, render};

/// The lanes for `hops` transcripts: the client, a proxy between each two hops, the agent.
pub fn lane_names(hops: usize) -> Vec<String> {
    let mut lanes = vec!["client".to_owned()];
    for k in 1..hops {
        lanes.push(format!("proxy {k}"));
    }
    lanes.push("agent".to_owned());
    lanes
}

/// Rows for records in order.
pub fn rows(records: Vec<record::Record>) -> Vec<model::Row> {
    let mut analyzer = model::Analyzer::new();
    records.into_iter().map(|r| analyzer.push(r)).collect()
}

/// The page for transcript files: acp-test transcripts, one per hop in lane order (a single
/// file: client and agent), or one trace of the official conductor. `Err` says which file
/// could not be read, or why the files do not go together.
pub fn page_for_files(files: &[PathBuf]) -> Result<String, String> {
    let mut hops = Vec::with_capacity(files.len());
    let mut named_lanes = None;
    for (hop, file) in files.iter().enumerate() {
        let text = std::fs::read_to_string(file)
            .map_err(|error| format!("cannot read {}: {error}", file.display()))?;
        let transcript = record::parse(&text, hop);
        if let Some(lanes) = transcript.lanes {
            if files.len() > 1 {
                return Err(format!(
                    "{} is a trace of the official conductor, which holds every hop: view it alone",
                    file.display()
                ));
            }
            named_lanes = Some(lanes);
        }
        hops.push(transcript.records);
    }
    let (records, timed) = record::merge(hops);
    let mut notes = Vec::new();
    if files.len() > 1 && !timed {
        notes.push(
            "These transcripts do not all have times (time_us), so they are shown one after the other, not interleaved."
                .to_owned(),
        );
    }
    if named_lanes.is_some() {
        notes.push(
            "A trace of the official conductor: each message is rebuilt from its event (id, method, params; a response's payload as result or error)."
                .to_owned(),
        );
    }
    let title = files
        .iter()
        .map(|f| display_name(f))
        .collect::<Vec<_>>()
        .join(" + ");
    let header = Header {
        title,
        lanes: named_lanes.unwrap_or_else(|| lane_names(files.len())),
        notes,
        events: None,
    };
    Ok(render(&header, &rows(records)))
}

/// `acp trace view FILE... [-o OUT]`: writes the page; the exit status.
pub fn run(command: &crate::args::TraceCommand) -> i32 {
    let crate::args::TraceCommand::View { files, output } = command;
    let output = output.clone().unwrap_or_else(|| default_output(&files[0]));
    let page = match page_for_files(files) {
        Ok(page) => page,
        Err(message) => {
            eprintln!("acp: {message}");
            return 1;
        }
    };
    if let Err(error) = std::fs::write(&output, page) {
        eprintln!("acp: cannot write {}: {error}", output.display());
        return 1;
    }
    eprintln!("acp: wrote {}", output.display());
    0
}

/// The default output of `acp trace view FILE`: FILE with the extension `.html`.
pub fn default_output(first: &Path) -> PathBuf {
    first.with_extension("html")
}

fn display_name(path: &Path) -> String {
    path.file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string())
}

#[cfg(test)]
mod tests;
