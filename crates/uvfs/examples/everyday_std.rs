//! The ten tasks of `everyday.rs` with `std::fs` on a host directory, for the comparison of
//! lengths in the README. Two tasks have no `std::fs` form and are done as a `std::fs` user
//! would: the other user's permission check reads the mode bits (a process cannot become
//! another user), and the tree is copied in and out with a walk (there is no copy of a
//! directory in `std::fs`).
//!
//! Run with `cargo run -p uvfs --example everyday_std`.

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

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
fn run(host: &Path, root: &Path) -> std::io::Result<Found> {
    let p = |s: &str| root.join(s);
    // 1. Nested directories.
    std::fs::create_dir_all(p("srv/www/static/css"))?;
    // 2. Write a string, read it back.
    std::fs::write(p("srv/www/index.html"), "<h1>hello</h1>")?;
    let greeting = std::fs::read_to_string(p("srv/www/index.html"))?;
    // 3. A recursive listing.
    let (mut listing, mut dirs) = (Vec::new(), vec![p("srv")]);
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir)? {
            let entry = entry?;
            if entry.file_type()?.is_dir() {
                dirs.push(entry.path());
            }
            listing.push(Path::new("/").join(entry.path().strip_prefix(root).unwrap()));
        }
    }
    listing.sort();
    // 4. Stat.
    let meta = std::fs::metadata(p("srv/www/index.html"))?;
    let size = meta.len();
    assert!(meta.is_file() && meta.modified()? <= std::time::SystemTime::now());
    // 5. Rename.
    std::fs::rename(p("srv/www/index.html"), p("srv/www/home.html"))?;
    // 6. Symlinks.
    std::os::unix::fs::symlink("home.html", p("srv/www/index.html"))?;
    let link_target = std::fs::read_link(p("srv/www/index.html"))?;
    // 7. A permission check as another user.
    std::fs::write(p("srv/secret"), "key")?;
    std::fs::set_permissions(p("srv/secret"), std::fs::Permissions::from_mode(0o600))?;
    let other_user_denied = std::fs::metadata(p("srv/secret"))?.permissions().mode() & 0o004 == 0;
    // 8. Copy a host tree in...
    // 9. ...and back out.
    for (from, to) in [
        (host.join("in"), p("imported")),
        (p("imported"), host.join("out")),
    ] {
        let mut todo = vec![(from, to)];
        while let Some((from, to)) = todo.pop() {
            std::fs::create_dir_all(&to)?;
            for entry in std::fs::read_dir(&from)? {
                let entry = entry?;
                if entry.file_type()?.is_dir() {
                    todo.push((entry.path(), to.join(entry.file_name())));
                } else {
                    std::fs::copy(entry.path(), to.join(entry.file_name()))?;
                }
            }
        }
    }
    let round_trip = std::fs::read_to_string(host.join("out/notes.txt"))?;
    // 10. Four threads writing files.
    std::fs::create_dir(p("jobs"))?;
    std::thread::scope(|s| {
        for t in 0..4 {
            let p = &p;
            s.spawn(move || -> std::io::Result<()> {
                let mut f = std::fs::File::create(p(&format!("jobs/{t}.log")))?;
                writeln!(f, "thread {t} done")
            });
        }
    });
    let thread_files = std::fs::read_dir(p("jobs"))?.count();
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
    let host = std::env::temp_dir().join(format!("uvfs-everyday-std-{}", std::process::id()));
    std::fs::create_dir_all(host.join("in"))?;
    std::fs::create_dir_all(host.join("root"))?;
    std::fs::write(host.join("in/notes.txt"), "from the host")?;
    let found = run(&host, &host.join("root"));
    std::fs::remove_dir_all(&host)?;
    println!("{:#?}", found?);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ten_tasks_run_on_the_host() {
        let host =
            std::env::temp_dir().join(format!("uvfs-everyday-std-test-{}", std::process::id()));
        std::fs::create_dir_all(host.join("in")).unwrap();
        std::fs::create_dir_all(host.join("root")).unwrap();
        std::fs::write(host.join("in/notes.txt"), "from the host").unwrap();
        let found = run(&host, &host.join("root"));
        std::fs::remove_dir_all(&host).unwrap();
        let found = found.unwrap();
        assert_eq!(found.greeting, "<h1>hello</h1>");
        assert_eq!(found.listing.len(), 4);
        assert_eq!((found.size, found.thread_files), (14, 4));
        assert_eq!(found.round_trip, "from the host");
        assert!(found.other_user_denied);
    }
}
