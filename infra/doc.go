// Package infra holds the deployable CloudFormation template (template.yaml)
// of the AWS stack. Its one piece of Go code lets tests parse the template
// with goformation, which does not know every property yet
// (WithoutNewerProperties); its test checks the template against the code — the table against
// store.TableInput, the functions, event source mappings, API, IAM and
// alarms against what the programs need (see README.md).
package infra
