//! Runs one random seed on uvfs, printing each op and outcome.
use uvfs_conformance::random::gen::{generate, Shape};
use uvfs_conformance::{Backend, Fds, UvfsBackend};
fn main() {
    let seed: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap();
    let case = generate(
        seed,
        Shape {
            ops: 120,
            ticked_one_in: 0,
        },
    );
    println!("mount {:?}", case.mount);
    let mut b = UvfsBackend::new(case.mount.as_deref()).unwrap();
    let mut fds = Fds::default();
    for (i, s) in case.steps.iter().enumerate() {
        println!("{} {:?} => {:?}", i + 1, s.op, s.bind);
        let o = b.run(&s.op, &fds);
        if let Some(n) = &s.bind {
            fds.bind(n, &o);
        }
        println!("   {:?}", o);
    }
}
