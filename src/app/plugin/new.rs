//! `chassis plugin new NAME --lang python|typescript`: a working process
//! plugin in a new folder — the plugin, its SDK vendored beside it, its
//! manifest as an include file, and a test. It never edits the user's
//! composition: it answers with the `include` line to add.

use std::path::{Path, PathBuf};

use super::templates;
use crate::app::error::AppError;

/// The plugin's language.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lang {
    /// Python 3.9+, `sdk/python`.
    Python,
    /// TypeScript/JavaScript on Node 18+, `sdk/typescript`.
    TypeScript,
}

/// What to create.
#[derive(Clone, Debug)]
pub struct NewOptions {
    /// The plugin's name (`[plugins.NAME]`).
    pub name: String,
    /// Its language.
    pub lang: Lang,
    /// The folder to create (default: `./NAME`).
    pub dir: Option<PathBuf>,
}

/// What was created.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Created {
    /// The folder.
    pub dir: PathBuf,
    /// The files written, in order.
    pub files: Vec<PathBuf>,
    /// The line to add to a composition.
    pub include: String,
    /// How to run the plugin's own test.
    pub test: String,
    /// How to check it against the protocol.
    pub check: String,
}

/// Whether `name` can name a plugin, a folder and (with `-` as `_`) a
/// Python function.
fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_lowercase())
        && name.len() <= 64
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_')
}

/// Create the plugin.
pub fn new_plugin(options: &NewOptions) -> Result<Created, AppError> {
    let name = options.name.as_str();
    if !valid_name(name) {
        return Err(AppError::input(format!(
            "`{name}` is not a plugin name chassis scaffolds: use lowercase letters, digits, `-` and `_`, starting with a letter (at most 64)"
        )));
    }
    let dir = options.dir.clone().unwrap_or_else(|| PathBuf::from(name));
    if dir.exists()
        && std::fs::read_dir(&dir)
            .map(|mut d| d.next().is_some())
            .unwrap_or(true)
    {
        return Err(AppError::input(format!(
            "`{}` already exists and is not empty; choose another folder with `--dir`",
            dir.display()
        )));
    }
    let shown = dir.display().to_string();
    let tool = format!("{}_echo", name.replace('-', "_"));
    let fill = |template: &str, command: &str, files: &str| {
        template
            .replace("{{name}}", name)
            .replace("{{dir}}", &shown)
            .replace("{{tool}}", &tool)
            .replace("{{capability}}", name)
            .replace("{{command}}", command)
            .replace("{{files}}", files)
    };
    let (files, test): (Vec<(&str, String)>, String) = match options.lang {
        Lang::Python => (
            vec![
                ("plugin.py", fill(templates::PYTHON_PLUGIN, "", "")),
                ("chassis_plugin.py", templates::PYTHON_SDK.to_owned()),
                (
                    "plugin.toml",
                    fill(
                        templates::MANIFEST,
                        "\"python3\", \"plugin.py\"",
                        "\"plugin.py\", \"chassis_plugin.py\"",
                    ),
                ),
                ("test_plugin.py", fill(templates::PYTHON_TEST, "", "")),
            ],
            format!(
                "python3 {}",
                Path::new(&shown).join("test_plugin.py").display()
            ),
        ),
        Lang::TypeScript => (
            vec![
                ("plugin.js", fill(templates::JS_PLUGIN, "", "")),
                ("chassis_plugin.js", templates::JS_SDK.to_owned()),
                ("chassis_plugin.d.ts", templates::JS_SDK_TYPES.to_owned()),
                (
                    "plugin.toml",
                    fill(
                        templates::MANIFEST,
                        "\"node\", \"plugin.js\"",
                        "\"plugin.js\", \"chassis_plugin.js\"",
                    ),
                ),
                ("test_plugin.js", fill(templates::JS_TEST, "", "")),
            ],
            format!(
                "node {}",
                Path::new(&shown).join("test_plugin.js").display()
            ),
        ),
    };
    let created_dir = !dir.exists();
    let write = || -> std::io::Result<Vec<PathBuf>> {
        std::fs::create_dir_all(&dir)?;
        let mut written = Vec::new();
        for (file, text) in &files {
            let path = dir.join(file);
            std::fs::write(&path, text)?;
            written.push(path);
        }
        Ok(written)
    };
    match write() {
        Ok(written) => Ok(Created {
            include: format!(
                "include = [\"{}\"]",
                Path::new(&shown).join("plugin.toml").display()
            ),
            check: format!(
                "chassis plugin check {}",
                Path::new(&shown).join("plugin.toml").display()
            ),
            dir,
            files: written,
            test,
        }),
        Err(e) => {
            if created_dir {
                let _ = std::fs::remove_dir_all(&dir);
            }
            Err(AppError::failure(format!(
                "cannot write the plugin into `{}`: {e}",
                dir.display()
            )))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_checked_and_a_full_folder_is_refused() {
        for bad in ["", "Caps", "1x", "a b", "x/y", "ü"] {
            assert!(!valid_name(bad), "{bad}");
        }
        assert!(valid_name("weather-api_2"));
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("x"), "").unwrap();
        let e = new_plugin(&NewOptions {
            name: "p".into(),
            lang: Lang::Python,
            dir: Some(dir.path().to_path_buf()),
        })
        .unwrap_err();
        assert_eq!(e.kind(), crate::app::error::ErrorKind::Input);
    }
}
