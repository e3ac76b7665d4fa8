pub fn go() {
    super::helper();
}
