//! Ten everyday tasks with `uvfs::fs`, line for line the tasks of `everyday_std.rs` (the same
//! with `std::fs` on a host directory): the README compares their lengths, and the tests
//! at the end of this file check the comparison and run the tasks.
//!
//! Run with `cargo run -p uvfs --example everyday`.

use std::io::Write;
use std::path::{Path, PathBuf};

use uvfs::fs::Fs;
use uvfs::Cred;

/// What the tasks found, for the test to check.
#[derive(Debug, PartialEq, Eq)]
struct Found {
    greeting: String,
    listing: Vec<PathBuf>,
    size: u64,
    link_target: PathBuf,
    other_user_denied: bool,
    round_trip: String,
    thread_files: usize,
}

// task-start
fn run(host: &Path) -> std::io::Result<Found> {
    let fs = Fs::new();
    // 1. Nested directories.
    fs.create_dir_all("/srv/www/static/css")?;
    // 2. Write a string, read it back.
    fs.write("/srv/www/index.html", "<h1>hello</h1>")?;
    let greeting = fs.read_to_string("/srv/www/index.html")?;
    // 3. A recursive listing.
    let (mut listing, mut dirs) = (Vec::new(), vec![PathBuf::from("/srv")]);
    while let Some(dir) = dirs.pop() {
        for entry in fs.read_dir(&dir)? {
            let entry = entry?;
            if entry.file_type()?.is_dir() {
                dirs.push(entry.path());
            }
            listing.push(entry.path());
        }
    }
    listing.sort();
    // 4. Stat.
    let meta = fs.metadata("/srv/www/index.html")?;
    let size = meta.len();
    assert!(meta.is_file() && meta.modified()? <= std::time::SystemTime::now());
    // 5. Rename.
    fs.rename("/srv/www/index.html", "/srv/www/home.html")?;
    // 6. Symlinks.
    fs.symlink("home.html", "/srv/www/index.html")?;
    let link_target = fs.read_link("/srv/www/index.html")?;
    // 7. A permission check as another user.
    fs.write("/srv/secret", "key")?;
    fs.set_permissions("/srv/secret", uvfs::fs::Permissions::from_mode(0o600))?;
    let other = fs.as_user(Cred::user(1000, 1000, &[]));
    let other_user_denied = other.read("/srv/secret").is_err();
    // 8. Copy a host tree in...
    fs.import(host.join("in"), "/imported")?;
    // 9. ...and back out.
    fs.export("/imported", host.join("out"))?;
    let round_trip = std::fs::read_to_string(host.join("out/notes.txt"))?;
    // 10. Four threads writing files.
    fs.create_dir("/jobs")?;
    std::thread::scope(|s| {
        for t in 0..4 {
            let fs = &fs;
            s.spawn(move || -> std::io::Result<()> {
                let mut f = fs.create(format!("/jobs/{t}.log"))?;
                writeln!(f, "thread {t} done")
            });
        }
    });
    let thread_files = fs.read_dir("/jobs")?.count();
    Ok(Found {
        greeting,
        listing,
        size,
        link_target,
        other_user_denied,
        round_trip,
        thread_files,
    })
}
// task-end

fn main() -> std::io::Result<()> {
    let host = std::env::temp_dir().join(format!("uvfs-everyday-{}", std::process::id()));
    std::fs::create_dir_all(host.join("in"))?;
    std::fs::write(host.join("in/notes.txt"), "from the host")?;
    let found = run(&host);
    std::fs::remove_dir_all(&host)?;
    println!("{:#?}", found?);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The lines of code between the task markers: not blank, not a comment.
    fn task_lines(src: &str) -> usize {
        let start = src.find("// task-start").expect("start marker");
        let end = src.find("// task-end").expect("end marker");
        src[start..end]
            .lines()
            .skip(1)
            .filter(|l| !l.trim().is_empty() && !l.trim().starts_with("//"))
            .count()
    }

    #[test]
    fn the_ten_tasks_find_what_std_fs_finds() {
        let host = std::env::temp_dir().join(format!("uvfs-everyday-test-{}", std::process::id()));
        std::fs::create_dir_all(host.join("in")).unwrap();
        std::fs::write(host.join("in/notes.txt"), "from the host").unwrap();
        let found = run(&host);
        std::fs::remove_dir_all(&host).unwrap();
        let found = found.unwrap();
        let listing: Vec<PathBuf> = [
            "/srv/www",
            "/srv/www/index.html",
            "/srv/www/static",
            "/srv/www/static/css",
        ]
        .iter()
        .map(PathBuf::from)
        .collect();
        assert_eq!(
            found,
            Found {
                greeting: "<h1>hello</h1>".into(),
                listing,
                size: 14,
                link_target: "home.html".into(),
                other_user_denied: true,
                round_trip: "from the host".into(),
                thread_files: 4,
            }
        );
    }

    #[test]
    fn the_tasks_take_at_most_one_line_in_five_more_than_with_std_fs() {
        let uvfs = task_lines(include_str!("everyday.rs"));
        let std = task_lines(include_str!("everyday_std.rs"));
        println!("lines of the ten tasks: uvfs::fs {uvfs}, std::fs {std}");
        assert!(
            uvfs > 30 && std > 30,
            "the markers hold the tasks: {uvfs}, {std}"
        );
        assert!(
            uvfs * 5 <= std * 6,
            "uvfs::fs {uvfs} lines against std::fs {std}"
        );
    }
}
