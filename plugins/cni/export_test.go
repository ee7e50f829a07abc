package cniplugin

// ConvertResult exposes convertResult to the external tests.
var ConvertResult = convertResult
