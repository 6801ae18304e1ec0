// A small Rust program for the symbolize differential tests: generics,
// closures, traits and inlining, built with rustc alone (no crates).
use std::collections::HashMap;

trait Area {
    fn area(&self) -> f64;
}

struct Rect {
    w: f64,
    h: f64,
}

impl Area for Rect {
    fn area(&self) -> f64 {
        self.w * self.h
    }
}

#[inline(never)]
fn total<T: Area>(v: &[T]) -> f64 {
    v.iter().map(|x| x.area()).sum()
}

#[inline(never)]
fn word_counts(s: &str) -> HashMap<&str, usize> {
    let mut m = HashMap::new();
    for w in s.split_whitespace() {
        *m.entry(w).or_insert(0) += 1;
    }
    m
}

fn main() {
    let n = std::env::args().count() + 5;
    let v: Vec<Rect> = (0..n).map(|i| Rect { w: i as f64, h: (i + 1) as f64 }).collect();
    let counts = word_counts("a b a c b a");
    println!("{} {}", total(&v), counts.len());
}
