//! A kobject-like tree in sysfs: the owner registers a device with a read-only and a
//! read-write attribute, mounts the tree at `/sys`, and code using `uvfs::fs` reads and
//! writes it as files; then the device goes away while a file is open.
//!
//! Run with `cargo run -p uvfs --example sysfs`.

use std::io::Read;
use std::sync::{Arc, Mutex};

use uvfs::fs::kernfs::{show, show_store};
use uvfs::fs::sysfs::Sysfs;
use uvfs::fs::{errno, Fs};
use uvfs::Errno;

/// What the example read, for the test below.
#[derive(Debug, PartialEq, Eq)]
struct Found {
    listing: Vec<String>,
    max_brightness: String,
    brightness: String,
    stored: Vec<u8>,
    read_after_removal: Option<Errno>,
}

fn run() -> std::io::Result<Found> {
    // The owner: class/leds/led0 with two attributes (Linux: a `struct device` and its
    // `DEVICE_ATTR_RO`/`DEVICE_ATTR_RW`).
    let sysfs = Sysfs::new();
    let led0 = sysfs
        .root()
        .add_child("class")?
        .add_child("leds")?
        .add_child("led0")?;
    led0.add_attr(
        "max_brightness",
        0o444,
        show(|out| out.extend_from_slice(b"255\n")),
    )?;
    let level = Arc::new(Mutex::new(b"0\n".to_vec()));
    let (shown, stored) = (level.clone(), level.clone());
    led0.add_attr(
        "brightness",
        0o644,
        show_store(
            move |out| out.extend_from_slice(&shown.lock().expect("level")),
            move |data| {
                *stored.lock().expect("level") = data.to_vec();
                Ok(data.len())
            },
        ),
    )?;

    // The user: mount it at /sys and use it as files.
    let fs = Fs::new();
    fs.create_dir("/sys")?;
    sysfs.mount(&fs.task(), "/sys")?;
    let mut listing = Vec::new();
    for entry in fs.read_dir("/sys/class/leds/led0")? {
        listing.push(entry?.file_name().to_string_lossy().into_owned());
    }
    let max_brightness = fs.read_to_string("/sys/class/leds/led0/max_brightness")?;
    fs.write("/sys/class/leds/led0/brightness", "128\n")?;
    let brightness = fs.read_to_string("/sys/class/leds/led0/brightness")?;
    println!("led0: {listing:?}, max_brightness {max_brightness:?}, brightness {brightness:?}");

    // The device goes away while a file is open: reads fail with ENODEV, as on Linux.
    let mut open = fs.open("/sys/class/leds/led0/brightness")?;
    led0.remove();
    let read_after_removal = open.read(&mut [0u8; 8]).err().and_then(|e| errno(&e));
    println!("read after removal: {read_after_removal:?}");
    let stored = level.lock().expect("level").clone();
    Ok(Found {
        listing,
        max_brightness,
        brightness,
        stored,
        read_after_removal,
    })
}

fn main() -> std::io::Result<()> {
    run().map(drop)
}

#[cfg(test)]
mod tests {
    /// The example's run. Oracle: what the code above registers, and Linux's sysfs (a
    /// directory lists its attributes in `kernfs_name_hash()` order; a read of a removed
    /// attribute fails with `ENODEV`).
    #[test]
    fn example_run_reads_writes_and_sees_the_removal() {
        let found = super::run().expect("the example runs");
        assert_eq!(
            found,
            super::Found {
                listing: vec!["brightness".into(), "max_brightness".into()],
                max_brightness: "255\n".into(),
                brightness: "128\n".into(),
                stored: b"128\n".to_vec(),
                read_after_removal: Some(uvfs::Errno::ENODEV),
            }
        );
    }
}
