//! A skills directory read from disk: each directory at its root a skill
//! (`<name>/SKILL.md` and the files below it), everything read bounded
//! before it is held: how many skills, how many files, how deep, how many
//! bytes (see the limits in the [module](super)). A symbolic link, a file
//! at the root, a name that is no URI path segment, an unreadable entry is
//! an error naming it, never skipped.

use std::fs;
use std::io::Read as _;
use std::path::Path;

use super::skill::{
    MAX_SKILL_BYTES, MAX_SKILL_DEPTH, MAX_SKILL_FILES, MAX_SKILLS, MAX_SKILLS_BYTES, SKILL_MD,
    Skill, uri_segment,
};
use crate::surface::error::SkillError;

/// The skills of the directory `root`, at most `most` of them, their bytes
/// taken from `budget`.
pub(super) fn load(root: &Path, budget: &mut u64, most: usize) -> Result<Vec<Skill>, SkillError> {
    let mut skills = Vec::new();
    for (path, kind) in entries(root, MAX_SKILLS + 1)? {
        match kind {
            Kind::Dir => {}
            Kind::File => {
                return Err(SkillError::new(
                    path.display().to_string(),
                    "a file at the root of a skills directory: only skill directories belong there",
                ));
            }
        }
        if skills.len() == most {
            return Err(SkillError::new(
                path.display().to_string(),
                format!("more than {MAX_SKILLS} skills"),
            ));
        }
        skills.push(skill(&path, budget)?);
    }
    Ok(skills)
}

enum Kind {
    File,
    Dir,
}

/// The entries of `dir` by name, at most `most`, each a file or a
/// directory.
fn entries(dir: &Path, most: usize) -> Result<Vec<(std::path::PathBuf, Kind)>, SkillError> {
    let unreadable = |path: &Path, error: std::io::Error| {
        SkillError::new(
            path.display().to_string(),
            format!("cannot be read: {error}"),
        )
    };
    let mut out = Vec::new();
    for entry in fs::read_dir(dir).map_err(|e| unreadable(dir, e))? {
        let entry = entry.map_err(|e| unreadable(dir, e))?;
        let path = entry.path();
        if out.len() == most {
            return Err(SkillError::new(
                dir.display().to_string(),
                format!("more than {most} entries"),
            ));
        }
        let meta = fs::symlink_metadata(&path).map_err(|e| unreadable(&path, e))?;
        let kind = if meta.file_type().is_symlink() {
            return Err(SkillError::new(
                path.display().to_string(),
                "a symbolic link: skills are read from regular files and directories only",
            ));
        } else if meta.is_dir() {
            Kind::Dir
        } else if meta.is_file() {
            Kind::File
        } else {
            return Err(SkillError::new(
                path.display().to_string(),
                "neither a regular file nor a directory",
            ));
        };
        out.push((path, kind));
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out)
}

/// The skill in `dir`, its name the directory's.
fn skill(dir: &Path, budget: &mut u64) -> Result<Skill, SkillError> {
    let name = dir
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| SkillError::new(dir.display().to_string(), "the name is not UTF-8"))?;
    let mut files = Vec::new();
    let mut bytes = 0u64;
    walk(dir, "", 0, &mut files, &mut bytes, budget)?;
    let Some(at) = files.iter().position(|(path, _)| path == SKILL_MD) else {
        return Err(SkillError::new(
            dir.join(SKILL_MD).display().to_string(),
            "missing: every skill has a SKILL.md at its root",
        ));
    };
    let (_, md) = files.swap_remove(at);
    let skill_md = String::from_utf8(md).map_err(|_| {
        SkillError::new(
            dir.join(SKILL_MD).display().to_string(),
            "SKILL.md is not UTF-8",
        )
    })?;
    let mut skill = Skill::new(name, skill_md);
    skill.files = files;
    skill.origin = Some(dir.to_path_buf());
    Ok(skill)
}

/// Every file below `dir` (whose path in the skill is `at`), bounded.
fn walk(
    dir: &Path,
    at: &str,
    depth: usize,
    files: &mut Vec<(String, Vec<u8>)>,
    bytes: &mut u64,
    budget: &mut u64,
) -> Result<(), SkillError> {
    for (path, kind) in entries(dir, MAX_SKILL_FILES + 1)? {
        let label = || path.display().to_string();
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
            return Err(SkillError::new(label(), "the name is not UTF-8"));
        };
        if !uri_segment(name) {
            return Err(SkillError::new(
                label(),
                "the name is not a URI path segment (letters, digits, `-`, `.`, `_`, `~`)",
            ));
        }
        let inner = if at.is_empty() {
            name.to_owned()
        } else {
            format!("{at}/{name}")
        };
        match kind {
            Kind::Dir => {
                if depth == MAX_SKILL_DEPTH {
                    return Err(SkillError::new(
                        label(),
                        format!("deeper than {MAX_SKILL_DEPTH} directories below the skill's root"),
                    ));
                }
                walk(&path, &inner, depth + 1, files, bytes, budget)?;
            }
            Kind::File => {
                if files.len() == MAX_SKILL_FILES {
                    return Err(SkillError::new(
                        label(),
                        format!(
                            "the skill has more than the {MAX_SKILL_FILES} files a skill may have"
                        ),
                    ));
                }
                let room = (MAX_SKILL_BYTES - *bytes).min(*budget);
                let mut file = fs::File::open(&path)
                    .map_err(|e| SkillError::new(label(), format!("cannot be read: {e}")))?;
                let mut contents = Vec::new();
                file.by_ref()
                    .take(room.saturating_add(1))
                    .read_to_end(&mut contents)
                    .map_err(|e| SkillError::new(label(), format!("cannot be read: {e}")))?;
                let len = contents.len() as u64;
                if len > room {
                    return Err(SkillError::new(
                        label(),
                        format!(
                            "too large: a skill's files may hold {MAX_SKILL_BYTES} bytes, a server's skills {MAX_SKILLS_BYTES} bytes together"
                        ),
                    ));
                }
                *bytes += len;
                *budget -= len;
                files.push((inner, contents));
            }
        }
    }
    Ok(())
}
