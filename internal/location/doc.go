// Package location is the locations domain (seed 001): physical locations
// with a unique, human-readable code, a Google place and coordinates.
//
// The package is pure: types and validation, no I/O, no AWS SDK. Storage
// (the location and its code lookup written in one transaction) lives in
// internal/store.
package location
