// The route serves uPlot's ES module from node_modules at /console/app/vendor/uplot.js, beside the compiled
// modules; this declaration gives the compiler its types under that same relative name.
import uPlot from 'uplot'
export default uPlot
