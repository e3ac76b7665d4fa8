mod leaf;

pub fn run() {
    leaf::go();
}

fn helper() {}
