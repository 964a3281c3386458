from torchlint.cli import main

# Guarded: worker processes started by `spawn` import this module without running the CLI.
if __name__ == "__main__":
    main()
