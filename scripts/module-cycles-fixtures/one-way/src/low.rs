//! The bottom. Its doc links name the modules above it: [`crate::high::top`],
//! [`super::folder`].

// crate::high::top() in a comment is no import.
/* Nor in a block comment: use crate::folder::inner; /* nested */ crate::high */

pub struct Thing;

pub fn name() -> &'static str {
    "crate::high::top"
}

pub fn quote() -> char {
    '"'
}

pub fn raw() -> &'static str {
    r#"use crate::high; "quoted""#
}

pub fn by_type() -> String {
    String::from("a method of a type is not a module")
}

#[cfg(test)]
use crate::folder::inner as _tested;

#[cfg(test)]
mod tests {
    use crate::high::top;

    #[test]
    fn reaches_up() {
        top();
    }
}
