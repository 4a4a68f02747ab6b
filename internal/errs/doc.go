// Package errs is the project's one error type: a few codes that every layer
// uses and that the HTTP layer maps to statuses in one table. Wrap with
// fmt.Errorf("…: %w", err); errors.As finds the *Error underneath.
package errs
