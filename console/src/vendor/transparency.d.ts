// The route serves @arbiter/transparency's browser build at /console/app/vendor/transparency.js, beside the compiled
// modules; this declaration gives the compiler its types under that same relative name.
export * from '@arbiter/transparency'
