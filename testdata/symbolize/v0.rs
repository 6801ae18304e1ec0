// A program whose v0 symbols cover closures in closures, generic and trait
// impls, arrays, dyn and consts: demangle_test.go compares our names for
// them with llvm-cxxfilt's.
use std::collections::HashMap;
#[inline(never)]
fn apply<F: Fn(u64) -> u64>(f: F, n: u64) -> u64 { f(n) }
mod outer { pub mod inner {
  pub struct Big32x40<T>(pub T);
  impl<T: Copy + Into<u64>> Big32x40<T> {
    #[inline(never)] pub fn go(&self) -> u64 { let c = |x: u64| { let d = |y: u64| y * 3 + x; d(x) }; c(self.0.into()) }
  }
  pub trait Tr { fn tr(&self) -> u64; }
  impl Tr for [u8; 10] { #[inline(never)] fn tr(&self) -> u64 { self.iter().map(|b| *b as u64).sum() } }
}}
fn main() {
  use outer::inner::Tr;
  let mut m: HashMap<String, (i8, &[u16])> = HashMap::new();
  m.insert("a".into(), (-1, &[1, 2]));
  let b = outer::inner::Big32x40(7u32);
  let arr = [3u8; 10];
  let r = apply(|x| x + 1, b.go()) + arr.tr() + m.len() as u64;
  let v: Vec<Box<dyn Fn(&str) -> usize + Send>> = vec![Box::new(|s| s.len())];
  println!("{}", r + v[0]("xyz") as u64);
}
