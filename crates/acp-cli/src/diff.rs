//! A small line diff for tool call diffs: the common prefix and suffix are trimmed, and the
//! middle is diffed by longest common subsequence (dynamic programming) when it is at most
//! `LCS_CELLS` line pairs, else shown as all removed, then all added. Printed as a unified diff
//! with three lines of context.

const LCS_CELLS: usize = 4_000_000;
const CONTEXT: usize = 3;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Equal,
    Delete,
    Insert,
}

/// The edit script from `old` to `new`: each entry is an op and the line it concerns.
fn script<'a>(old: &[&'a str], new: &[&'a str]) -> Vec<(Op, &'a str)> {
    let prefix = old.iter().zip(new).take_while(|(a, b)| a == b).count();
    let suffix = old[prefix..]
        .iter()
        .rev()
        .zip(new[prefix..].iter().rev())
        .take_while(|(a, b)| a == b)
        .count();
    let (a, b) = (
        &old[prefix..old.len() - suffix],
        &new[prefix..new.len() - suffix],
    );
    let mut ops: Vec<(Op, &str)> = old[..prefix].iter().map(|l| (Op::Equal, *l)).collect();
    if a.len().saturating_mul(b.len()) <= LCS_CELLS {
        // lcs[i][j]: the length of the LCS of a[i..] and b[j..].
        let width = b.len() + 1;
        let mut lcs = vec![0u32; (a.len() + 1) * width];
        for i in (0..a.len()).rev() {
            for j in (0..b.len()).rev() {
                lcs[i * width + j] = if a[i] == b[j] {
                    lcs[(i + 1) * width + j + 1] + 1
                } else {
                    lcs[(i + 1) * width + j].max(lcs[i * width + j + 1])
                };
            }
        }
        let (mut i, mut j) = (0, 0);
        while i < a.len() && j < b.len() {
            if a[i] == b[j] {
                ops.push((Op::Equal, a[i]));
                i += 1;
                j += 1;
            } else if lcs[(i + 1) * width + j] >= lcs[i * width + j + 1] {
                ops.push((Op::Delete, a[i]));
                i += 1;
            } else {
                ops.push((Op::Insert, b[j]));
                j += 1;
            }
        }
        ops.extend(a[i..].iter().map(|l| (Op::Delete, *l)));
        ops.extend(b[j..].iter().map(|l| (Op::Insert, *l)));
    } else {
        ops.extend(a.iter().map(|l| (Op::Delete, *l)));
        ops.extend(b.iter().map(|l| (Op::Insert, *l)));
    }
    ops.extend(old[old.len() - suffix..].iter().map(|l| (Op::Equal, *l)));
    ops
}

/// A unified diff of `old` (`None`: a new file) to `new`, for `path`. Each line ends with `\n`.
pub fn unified(path: &str, old: Option<&str>, new: &str) -> String {
    let old_lines: Vec<&str> = old.map_or_else(Vec::new, |o| o.lines().collect());
    let new_lines: Vec<&str> = new.lines().collect();
    let ops = script(&old_lines, &new_lines);
    let mut out = String::new();
    out.push_str(&match old {
        Some(_) => format!("--- {path}\n"),
        None => "--- /dev/null\n".to_owned(),
    });
    out.push_str(&format!("+++ {path}\n"));
    let changed: Vec<usize> = (0..ops.len()).filter(|&k| ops[k].0 != Op::Equal).collect();
    if changed.is_empty() {
        out.push_str("(no changes)\n");
        return out;
    }
    // Group the changes whose contexts touch into hunks of op indices [start, end).
    let mut hunks: Vec<(usize, usize)> = Vec::new();
    for &k in &changed {
        let start = k.saturating_sub(CONTEXT);
        let end = (k + 1 + CONTEXT).min(ops.len());
        match hunks.last_mut() {
            Some(last) if start <= last.1 => last.1 = end,
            _ => hunks.push((start, end)),
        }
    }
    // Line numbers (1-based) at each op index.
    let (mut old_no, mut new_no) = (vec![1usize; ops.len() + 1], vec![1usize; ops.len() + 1]);
    for (k, (op, _)) in ops.iter().enumerate() {
        old_no[k + 1] = old_no[k] + usize::from(*op != Op::Insert);
        new_no[k + 1] = new_no[k] + usize::from(*op != Op::Delete);
    }
    for (start, end) in hunks {
        let old_len = old_no[end] - old_no[start];
        let new_len = new_no[end] - new_no[start];
        // As diff(1) does: an empty range starts at the line before it.
        let at = |no: usize, len: usize| if len == 0 { no - 1 } else { no };
        out.push_str(&format!(
            "@@ -{},{old_len} +{},{new_len} @@\n",
            at(old_no[start], old_len),
            at(new_no[start], new_len)
        ));
        for (op, line) in &ops[start..end] {
            let sign = match op {
                Op::Equal => ' ',
                Op::Delete => '-',
                Op::Insert => '+',
            };
            out.push(sign);
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::unified;

    #[test]
    fn new_file() {
        assert_eq!(
            unified("/p/s.txt", None, "a\nb\n"),
            "--- /dev/null\n+++ /p/s.txt\n@@ -0,0 +1,2 @@\n+a\n+b\n"
        );
    }

    #[test]
    fn change_in_the_middle_with_context() {
        let old = "1\n2\n3\n4\n5\n6\n7\n8\n9\n";
        let new = "1\n2\n3\n4\nfive\n6\n7\n8\n9\n";
        assert_eq!(
            unified("f", Some(old), new),
            "--- f\n+++ f\n@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8\n"
        );
    }

    #[test]
    fn separate_hunks_and_lcs() {
        let old = "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\nk\n";
        let new = "A\nb\nc\nd\ne\nf\ng\nh\ni\nj\nK\n";
        let diff = unified("f", Some(old), new);
        assert_eq!(diff.matches("@@ -").count(), 2, "{diff}");
        assert!(
            diff.contains("-a\n+A\n") && diff.contains("-k\n+K\n"),
            "{diff}"
        );
        assert_eq!(
            unified("f", Some("x\n"), "x\n"),
            "--- f\n+++ f\n(no changes)\n"
        );
    }
}
