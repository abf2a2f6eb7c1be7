//! The memory table: for every column its bytes per empty file (the headline), that figure
//! over the host's, and the other figures its probe measured; then the host's caches one by
//! one and what each column measures.

use comfy_table::presets::UTF8_FULL_CONDENSED;
use comfy_table::{Cell, CellAlignment, Table};

use super::runner::{MemoryColumnResult, MemoryResult};
use super::Probe;

/// A figure of one column, or `-` where its probe does not measure it.
fn figure(c: &MemoryColumnResult, pick: impl Fn(&Probe) -> Option<f64>) -> String {
    c.probe
        .as_ref()
        .and_then(pick)
        .map_or_else(|| "-".to_string(), |v| format!("{v:.1}"))
}

/// The headline cell: bytes per file, or why there is none.
fn headline(c: &MemoryColumnResult) -> String {
    match (c.bytes_per_file, &c.skipped, &c.error) {
        (Some(b), _, _) => format!("{b:.1}"),
        (None, Some(why), _) => why.clone(),
        (None, _, Some(e)) => format!("FAILED: {e}"),
        _ => "-".to_string(),
    }
}

/// Renders the table of `r`.
pub fn memory_table(r: &MemoryResult) -> Table {
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED);
    let mut header = vec!["bytes per file".to_string()];
    header.extend(r.columns.iter().map(|c| c.column.to_string()));
    t.set_header(header);
    let host = r.column("host").and_then(|c| c.bytes_per_file);
    type Row<'a> = (&'a str, Box<dyn Fn(&MemoryColumnResult) -> String + 'a>);
    let rows: Vec<Row<'_>> = vec![
        ("B/file", Box::new(headline)),
        ("measured as", Box::new(|c| c.measured_as.to_string())),
        (
            "x host",
            Box::new(move |c| match (c.bytes_per_file, host) {
                (Some(b), Some(h)) if c.column != "host" && h > 0.0 => format!("{:.2}x", b / h),
                _ => "-".to_string(),
            }),
        ),
        (
            "RSS growth",
            Box::new(|c| figure(c, |p| p.per_file(p.rss_delta_bytes))),
        ),
        (
            "heap in use growth",
            Box::new(|c| {
                figure(c, |p| {
                    p.per_file(p.heap_delta_bytes.or(p.heap_alloc_delta_bytes))
                })
            }),
        ),
        (
            "slab objects growth",
            Box::new(|c| figure(c, |p| p.per_file(p.slab_object_bytes()))),
        ),
        (
            "slab pages growth",
            Box::new(|c| figure(c, |p| p.per_file(p.slab_page_bytes()))),
        ),
    ];
    for (label, cell) in rows {
        let mut row = vec![Cell::new(label)];
        for c in &r.columns {
            row.push(Cell::new(cell(c)).set_alignment(CellAlignment::Right));
        }
        t.add_row(row);
    }
    t
}

/// The host's caches, one by one: "dentry 1.00 x 192 B = 192.0, ...", then the caches not
/// counted.
pub fn host_caches_line(r: &MemoryResult) -> Option<String> {
    let p = r.column("host")?.probe.as_ref()?;
    let caches = p.slab.as_ref()?;
    let files = p.files.max(1) as f64;
    let show = |counted: bool| -> Vec<String> {
        caches
            .iter()
            .filter(|c| c.counted == counted)
            .map(|c| {
                if !c.present {
                    return format!("{} (absent)", c.name);
                }
                format!(
                    "{} {:.3} x {} B = {:.1}",
                    c.name,
                    c.objects as f64 / files,
                    c.objsize_bytes,
                    c.object_bytes as f64 / files
                )
            })
            .collect()
    };
    let others = show(false);
    let others = if others.is_empty() {
        "none".to_string()
    } else {
        others.join(", ")
    };
    Some(format!(
        "host slab caches, objects per file x object size = B/file: counted: {}; other caches that grew, not counted: {others}",
        show(true).join(", "),
    ))
}

/// gVisor's live heap objects and runtime growth per file, if it ran.
pub fn gvisor_line(r: &MemoryResult) -> Option<String> {
    let p = r.column("gvisor")?.probe.as_ref()?;
    let objects = p.per_file(p.heap_objects_delta)?;
    let sys = p.per_file(p.sys_delta_bytes)?;
    Some(format!(
        "gvisor: {objects:.2} live Go heap objects per file; the Go runtime's memory from the OS (MemStats.Sys) grew {sys:.1} B per file"
    ))
}

/// Prints the table, the per-column details and the notes.
pub fn print(r: &MemoryResult) {
    println!(
        "machine: {} | {} CPUs | Linux {} | {}",
        r.machine.cpu, r.machine.cores, r.machine.kernel, r.machine.rustc
    );
    println!();
    println!("{}", title(r));
    println!("{}", memory_table(r));
    for line in [host_caches_line(r), gvisor_line(r)].into_iter().flatten() {
        println!("{line}");
    }
    println!("x host: the column's bytes per file over the host's (below 1: it keeps less per file than the kernel).");
    for n in &r.notes {
        println!("- {n}");
    }
    if r.failed {
        println!("FAILED: at least one column errored (see the table)");
    }
}

/// "memory: 1000000 empty files in 1000 directories ...".
pub fn title(r: &MemoryResult) -> String {
    format!(
        "memory: {} empty files in {} directories (open(O_CREAT|O_WRONLY, 0644) + close each), bytes per file; each column in a fresh process",
        r.size.files, r.size.dirs
    )
}
