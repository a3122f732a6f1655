//! `surfcl-node`: placeholder until the ROS 2 issue lands.
fn main() {
    eprintln!("surfcl-node: not implemented yet");
    std::process::exit(2);
}
