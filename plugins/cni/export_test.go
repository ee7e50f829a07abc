package cni

// ConvertResult exposes convertResult to the external tests.
var ConvertResult = convertResult

// ParseBandwidth exposes parseBandwidth to the external tests.
var ParseBandwidth = parseBandwidth
