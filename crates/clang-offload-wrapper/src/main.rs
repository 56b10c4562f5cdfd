fn main() {
    eprintln!("not implemented yet");
    std::process::exit(1);
}
