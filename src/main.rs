fn main() -> std::process::ExitCode {
    bm2ironic::cli_main()
}
