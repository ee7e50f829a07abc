// Package cli is the command line every nrinet command (nrinetd,
// nri-podnet, nri-cni, nrinet-demo) reads the same way:
//
//   - one layout of the usage text ([Command.Usage]): the forms of the
//     command line, what the command does, then its flags;
//   - -help and -h print it on standard output, status 0;
//   - a bad command line (an unknown flag, a bad flag value, stray
//     arguments) is one line on standard error, naming the flag and the
//     value, with a hint to run -help, status 2 ([ExitUsage]);
//   - a configuration error is one line naming the file, the key and the
//     value, status 2 ([Usage], [ReadFile]); every other failure status 1,
//     or what [WithStatus] says;
//   - a flag's old name keeps working as a deprecated alias, and a command
//     line that uses it gets one deprecation line in the log
//     ([Command.Deprecate], [Command.Deprecated]).
//
// The commands check their whole command line and configuration before
// they change anything on the node, so that status 2 means nothing was
// done.
package cli
